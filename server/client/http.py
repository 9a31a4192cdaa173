"""The HTTP side every reference client shares: its URL, options and httpx client.

A client either borrows an httpx client (a test's, a notebook's, Starlette's TestClient)
or makes its own, which it then closes. The blocking and async clients differ only in the
kind of httpx client they make.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import httpx

from server.client.options import ClientOptions, Shortcuts

#: How long one HTTP exchange may take before the client gives up on it.
HTTP_TIMEOUT_S = 30.0

H = TypeVar("H", httpx.Client, httpx.AsyncClient)


class HttpClient(Shortcuts, Generic[H]):
    """A client of one MCP endpoint over an httpx client it borrows or owns."""

    def __init__(
        self,
        url: str,
        *,
        http: H | None = None,
        transport: Any = None,
        **options: Any,
    ) -> None:
        self.url = url
        self.options = ClientOptions(**options)
        self._http: H = http if http is not None else self._new_http(transport)
        self._owns_http = http is None

    def _new_http(self, transport: Any) -> H:
        raise NotImplementedError


class BlockingHttpClient(HttpClient[httpx.Client]):
    """A client that blocks on each exchange (scripts, notebooks, threads)."""

    def _new_http(self, transport: httpx.BaseTransport | None) -> httpx.Client:
        return httpx.Client(transport=transport, timeout=HTTP_TIMEOUT_S)

    def close(self) -> None:
        """Release the httpx client if this client made it."""
        if self._owns_http:
            self._http.close()


class AsyncHttpClient(HttpClient[httpx.AsyncClient]):
    """A client that awaits each exchange (asyncio)."""

    def _new_http(self, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=transport, timeout=HTTP_TIMEOUT_S)

    async def aclose(self) -> None:
        """Release the httpx client if this client made it."""
        if self._owns_http:
            await self._http.aclose()

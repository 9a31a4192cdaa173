"""The reference legacy client (protocol 2025-11-25): a session, SSE streams, answers by POST.

The old way a client serves a server that needs input in the middle of a call:

1. `initialize` opens a session; the server's `Mcp-Session-Id` goes on every later request
   (and `notifications/initialized` says the handshake is done).
2. A `tools/call` may be answered with an SSE stream instead of JSON. On it the server sends
   JSON-RPC *requests* (`elicitation/create`, `sampling/createMessage`, `roots/list`), each
   with an id of its own; the client answers each with a separate POST of the JSON-RPC
   *response* (202 Accepted), while the stream stays open.
3. The stream ends with the call's result.

`LegacySession` and `LegacyExchange` hold that protocol logic and no I/O, so the same rules
drive the sync client, the async client and the load test's Locust users (which read the
stream line by line with their own HTTP client). Answers go through the same `Handlers`
callbacks as the MRTR client. Every POST is recorded as a `Round` and every message in
either direction in `wire`, so notebooks can show the traffic. An httpx client keeps
cookies, so a sticky load balancer's cookie (HAProxy's `SERVERID`) rides along by itself.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

import httpx

from server.client.http import AsyncHttpClient, BlockingHttpClient
from server.client.legacy_session import LegacyExchange, LegacySession
from server.client.replies import McpError, parse_body
from server.protocol.jsonrpc import json_object


def _is_stream(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


class LegacyClient(BlockingHttpClient):
    """A blocking 2025-11-25 client on httpx: `with LegacyClient(url) as c: c.call_tool(...)`."""

    def __init__(self, url: str, *, answer_url: str | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        #: Where answers are POSTed; a load balancer may in effect pick any replica.
        self.answer_url = answer_url or url
        self.session = LegacySession(self.options.capabilities(), token=self.options.token)

    def __enter__(self) -> LegacyClient:
        self.initialize()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def initialize(self) -> LegacySession:
        """Open the session: initialize, then notifications/initialized."""
        headers, body = self.session.initialize_request()
        response = self._http.post(self.url, json=body, headers=headers)
        self.session.opened(response.status_code, response.headers, parse_body(response))
        headers, body = self.session.initialized_notification()
        self._http.post(self.url, json=body, headers=headers)
        return self.session

    def exchange(self, method: str, params: dict[str, Any] | None = None) -> LegacyExchange:
        """A new request in the session, not yet sent."""
        return self.session.exchange(method, params)

    def run(self, exchange: LegacyExchange) -> LegacyExchange:
        """Send the request, answer what the server asks on the stream, until the result."""
        headers, body = exchange.next_request()
        with self._http.stream("POST", self.url, json=body, headers=headers) as response:
            if not _is_stream(response):
                response.read()
                exchange.take_json(response.status_code, json_object(response.content))
                return exchange
            for line in response.iter_lines():
                request = exchange.feed_line(line)
                if request is not None:
                    self._answer(exchange, request)
                if exchange.done:
                    break
        if not exchange.done:
            raise McpError(-32603, "the stream ended without a result", None, 200)
        return exchange

    def _answer(self, exchange: LegacyExchange, request: dict[str, Any]) -> None:
        headers, body = exchange.answer_request(
            request, exchange.answer(request, self.options.handlers)
        )
        started = time.perf_counter()
        response = self._http.post(self.answer_url, json=body, headers=headers)
        elapsed = time.perf_counter() - started
        exchange.answered(body, response.status_code, json_object(response.content), elapsed)

    def request(self, method: str, params: dict[str, Any] | None = None) -> LegacyExchange:
        """Any request of the session, answered to the end."""
        return self.run(self.exchange(method, params))

    def ping(self) -> dict[str, Any]:
        return self.request("ping").result or {}

    def list_tools(self) -> list[dict[str, Any]]:
        return (self.request("tools/list").result or {}).get("tools", [])

    def close(self) -> None:
        """End the session (DELETE), then release the HTTP client."""
        try:
            if self.session.session_id:
                self._http.delete(self.url, headers=self.session.headers())
        except httpx.HTTPError:
            pass  # the server is gone; so is the session
        finally:
            self.session.session_id = None
            super().close()


class AsyncLegacyClient(AsyncHttpClient):
    """The async twin of `LegacyClient`: `async with AsyncLegacyClient(url) as c: ...`."""

    def __init__(self, url: str, *, answer_url: str | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        #: Where answers are POSTed; a load balancer may in effect pick any replica.
        self.answer_url = answer_url or url
        self.session = LegacySession(self.options.capabilities(), token=self.options.token)

    async def __aenter__(self) -> AsyncLegacyClient:
        await self.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def initialize(self) -> LegacySession:
        """Open the session: initialize, then notifications/initialized."""
        headers, body = self.session.initialize_request()
        response = await self._http.post(self.url, json=body, headers=headers)
        self.session.opened(response.status_code, response.headers, parse_body(response))
        headers, body = self.session.initialized_notification()
        await self._http.post(self.url, json=body, headers=headers)
        return self.session

    def exchange(self, method: str, params: dict[str, Any] | None = None) -> LegacyExchange:
        """A new request in the session, not yet sent."""
        return self.session.exchange(method, params)

    async def run(self, exchange: LegacyExchange) -> LegacyExchange:
        """Send the request, answer what the server asks on the stream, until the result."""
        headers, body = exchange.next_request()
        async with self._http.stream("POST", self.url, json=body, headers=headers) as response:
            if not _is_stream(response):
                await response.aread()
                exchange.take_json(response.status_code, json_object(response.content))
                return exchange
            async for line in response.aiter_lines():
                request = exchange.feed_line(line)
                if request is not None:
                    await self._answer(exchange, request)
                if exchange.done:
                    break
        if not exchange.done:
            raise McpError(-32603, "the stream ended without a result", None, 200)
        return exchange

    async def _answer(self, exchange: LegacyExchange, request: dict[str, Any]) -> None:
        answer = exchange.answer(request, self.options.handlers)
        if inspect.isawaitable(answer):
            answer = await answer
        headers, body = exchange.answer_request(request, answer)
        started = time.perf_counter()
        response = await self._http.post(self.answer_url, json=body, headers=headers)
        elapsed = time.perf_counter() - started
        exchange.answered(body, response.status_code, json_object(response.content), elapsed)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> LegacyExchange:
        """Any request of the session, answered to the end."""
        return await self.run(self.exchange(method, params))

    async def ping(self) -> dict[str, Any]:
        return (await self.request("ping")).result or {}

    async def list_tools(self) -> list[dict[str, Any]]:
        return ((await self.request("tools/list")).result or {}).get("tools", [])

    async def aclose(self) -> None:
        """End the session (DELETE), then release the HTTP client."""
        try:
            if self.session.session_id:
                await self._http.delete(self.url, headers=self.session.headers())
        except httpx.HTTPError:
            pass  # the server is gone; so is the session
        finally:
            self.session.session_id = None
            await super().aclose()

"""The tiny HTTP interface the flows are written against, and its httpx implementation.

A flow needs only `Post` (one JSON-RPC message in, status, headers and JSON body out) and,
for legacy streams, `LegacyHttp`. Locust's fast HTTP client implements them in the
locustfile; httpx implements them here for tests and notebooks. A connection that fails
is status 0, never an exception, so flows decide alone what a cut means.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from server.client import reply_message
from server.protocol.jsonrpc import json_object

#: HTTP statuses a balancer returns when a replica is gone or busy: retry elsewhere.
RETRYABLE_STATUS = {0, 502, 503, 504}


@dataclass
class HttpReply:
    """What a POST returned: status (0 when the connection failed), headers, JSON body."""

    status: int
    served_by: str | None
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)


Post = Callable[[dict[str, str], dict[str, Any]], HttpReply]


@dataclass
class StreamReply:
    """A POST whose answer may be an SSE stream: read `lines()` while it is open."""

    status: int
    served_by: str | None
    is_stream: bool
    body: dict[str, Any] | None
    lines: Callable[[], Iterator[str]]


class LegacyHttp(Protocol):
    """What a legacy flow needs from an HTTP client (cookies kept, for sticky balancers)."""

    def post(self, headers: dict[str, str], body: dict[str, Any]) -> HttpReply: ...

    def stream(
        self, headers: dict[str, str], body: dict[str, Any]
    ) -> AbstractContextManager[StreamReply]: ...


class StreamCut(Exception):
    """The call's stream or session is gone (replica stopped, crashed or restarted)."""


class HttpxLegacy:
    """`LegacyHttp` on an httpx client (tests, notebooks)."""

    def __init__(self, client: Any, url: str) -> None:
        self.post = httpx_post(client, url)
        self.client = client
        self.url = url

    @contextlib.contextmanager
    def stream(self, headers: dict[str, str], body: dict[str, Any]) -> Iterator[StreamReply]:
        import httpx

        try:
            with self.client.stream("POST", self.url, json=body, headers=headers) as response:
                is_stream = response.headers.get("content-type", "").startswith("text/event-stream")
                parsed = None
                if not is_stream:
                    response.read()
                    parsed = json_object(response.text)
                yield StreamReply(
                    response.status_code,
                    response.headers.get("x-served-by"),
                    is_stream,
                    parsed,
                    response.iter_lines,
                )
        except httpx.TransportError as exc:
            raise StreamCut(f"connection failed: {type(exc).__name__}") from exc


def httpx_post(client: Any, url: str) -> Post:
    """A `Post` on an httpx client (tests, notebooks); connection failures become status 0."""
    import httpx

    def post(headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
        try:
            response = client.post(url, json=body, headers=headers)
        except httpx.TransportError:
            return HttpReply(0, None, None)
        return HttpReply(
            response.status_code,
            response.headers.get("x-served-by"),
            reply_message(response.headers.get("content-type", ""), response.content),
            {k.lower(): v for k, v in response.headers.items()},
        )

    return post

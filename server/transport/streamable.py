"""Streamable HTTP over ASGI: reading a POST to /mcp and writing JSON or SSE back.

The request's headers once as a dict, the body within its limit, whether the client has
gone, whether Host and Origin name this machine, and the two response shapes (one JSON
message, or a stream of Server-Sent Events). These work on the ASGI scope and channels
directly: POST /mcp does not pass through Starlette's router (`server.transport.routing`).
What the headers must say is `server.protocol.headers`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Coroutine, Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio
from starlette.requests import ClientDisconnect
from starlette.responses import Response, StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from server.protocol import jsonrpc
from server.protocol.headers import METHOD_KEY, NAME_KEY, SESSION_HEADER, VERSION_KEY
from server.protocol.jsonrpc import RpcError

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}
JSON_CONTENT_TYPE = "application/json"


class BodyTooLarge(Exception):
    """A request body over the configured limit (HTTP 413)."""


#: Headers a request may carry once only. A repeated routing header is how a request
#: slips past a gateway that authorises on the first copy while the server reads the last.
SINGLE_HEADERS = frozenset({"host", "origin", "authorization", "content-type", "content-length"})


class RepeatedHeader(Exception):
    """A header that must appear once appeared twice (HTTP 400)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"the {name} header appears more than once")
        self.name = name


#: Header names nearly every request carries, decoded once. Looking a name up here costs
#: less than decoding it again; any other name is decoded as it comes. Fixed: a client
#: sending made-up names cannot grow it.
_COMMON_NAMES = {
    name.encode(): name
    for name in (
        *SINGLE_HEADERS,
        "accept",
        "accept-encoding",
        "connection",
        "user-agent",
        VERSION_KEY,
        METHOD_KEY,
        NAME_KEY,
        SESSION_HEADER.lower(),
        "last-event-id",
    )
}


def request_headers(scope: Scope) -> dict[str, str]:
    """The request's headers as a plain dict (lowercase names), built once per request.

    Starlette's `Headers` scans its list on every lookup; the request path looks up a
    handful of headers, so one pass into a dict is cheaper. Raises `RepeatedHeader` when
    an `Mcp-*` header or one of `SINGLE_HEADERS` appears twice.
    """
    raw = scope["headers"]
    common = _COMMON_NAMES.get
    # A loop, not a comprehension: one function object fewer per request.
    headers: dict[str, str] = {}
    for key, value in raw:
        headers[common(key) or key.decode("latin-1")] = value.decode("latin-1")
    if len(headers) != len(raw):
        seen: set[str] = set()
        for key, _ in raw:
            name = key.decode("latin-1").lower()
            if name in seen and (name.startswith("mcp-") or name in SINGLE_HEADERS):
                raise RepeatedHeader(name)
            seen.add(name)
    return headers


async def read_body(receive: Receive, headers: Mapping[str, str], limit_bytes: int) -> bytes:
    """The request body, refusing to buffer more than `limit_bytes`.

    Read from the ASGI messages directly: nearly every body arrives in one message, and
    Starlette's `Request.stream` (an async generator per request) cost more than the
    rest of reading. A disconnect raises Starlette's `ClientDisconnect`, as it does.
    """
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit_bytes:
        raise BodyTooLarge()
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            continue
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit_bytes:
            raise BodyTooLarge()
        if not message.get("more_body", False):
            return b"".join((*chunks, chunk)) if chunks else chunk
        chunks.append(chunk)


class Departure:
    """Whether the client of one request has gone, asked without waiting for news.

    What Starlette's `Request.is_disconnected` does, without a `Request` per request:
    take the next ASGI message if one is ready; `http.disconnect` means gone for good.
    Read only once the body has been read, as every caller of it does.
    """

    __slots__ = ("_gone", "_receive")

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._gone = False

    async def __call__(self) -> bool:
        if not self._gone:
            message: Message = {}
            with anyio.CancelScope() as scope:
                scope.cancel()
                message = await self._receive()
            self._gone = message.get("type") == "http.disconnect"
        return self._gone


_local_host_values: dict[str, bool] = {}


def is_local_host(headers: Mapping[str, str]) -> bool:
    """Whether the Host header names this machine (DNS-rebinding protection on loopback)."""
    host = headers.get("host", "")
    local = _local_host_values.get(host)
    if local is None:
        if len(_local_host_values) > 1024:
            _local_host_values.clear()
        local = _local_host_values[host] = _hostname(f"//{host}") in LOCAL_HOSTS
    return local


def is_loopback_origin(origin: str) -> bool:
    """Whether a page's Origin is on this machine (`http://localhost:3000`, ...)."""
    return _hostname(origin) in LOCAL_HOSTS


def _hostname(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


class JsonMessageResponse(Response):
    """An application/json response of bytes already encoded, its headers built directly.

    Starlette's `Response.__init__` renders content and inspects headers generically;
    every /mcp answer is the same shape, so this sets what that would set, and no more.
    """

    media_type = JSON_CONTENT_TYPE

    def __init__(self, body: bytes, status_code: int = 200) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        self.raw_headers = [
            (b"content-length", str(len(body)).encode()),
            (b"content-type", b"application/json"),
        ]

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Coroutine[Any, Any, None]:
        """Its two ASGI messages, sent directly: it has no background task to run after.

        Not a coroutine itself: it hands back `write`'s, one coroutine fewer per answer.
        """
        return self.write(send)

    async def write(self, send: Send) -> None:
        """Send the head and the body on an ASGI `send`."""
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        await send({"type": "http.response.body", "body": self.body})


def json_response(body: dict[str, Any], status: int = 200) -> Response:
    """One JSON-RPC message as an application/json response."""
    return JsonMessageResponse(jsonrpc.encode(body), status)


def error_response(rid: jsonrpc.RequestId, error: RpcError) -> Response:
    """A JSON-RPC error with the HTTP status the transport rules give it."""
    return json_response(jsonrpc.error_response(rid, error), error.http_status)


def sse_event(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as a Server-Sent Event."""
    return b"event: message\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"


#: The head of an SSE response, as `sse_response` sends it: proxies must not buffer it.
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


async def start_sse(send: Send) -> None:
    """Start an SSE response on an ASGI `send`; its events follow as body messages."""
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})


async def send_json(send: Send, message: dict[str, Any]) -> None:
    """Answer on an ASGI `send` with one JSON-RPC message (application/json, 200)."""
    await JsonMessageResponse(jsonrpc.encode(message)).write(send)


def sse_response(events: AsyncIterator[bytes], headers: dict[str, str] | None = None) -> Response:
    """A text/event-stream response that proxies must not buffer."""
    return StreamingResponse(
        events,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})},
    )

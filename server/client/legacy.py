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
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from server.client.mrtr import (
    CLIENT_INFO,
    Handlers,
    McpError,
    Round,
    _ClientBase,
    result_of,
    text_of,
)

LEGACY_VERSION = "2025-11-25"
SESSION_HEADER = "Mcp-Session-Id"

_ids = itertools.count(1)


@dataclass
class WireMessage:
    """One JSON-RPC message as it crossed the wire, in order."""

    #: `client->server` (a POST body) or `server->client` (a response body or SSE event).
    direction: str
    message: dict[str, Any]
    #: `post`, `json` (a response body) or `sse` (an event on a stream).
    via: str
    at_s: float


class SseDecoder:
    """Server-Sent Events, fed one line at a time: yields each event's JSON message."""

    def __init__(self) -> None:
        self._data: list[str] = []
        #: Comment lines seen (the server's keep-alives).
        self.comments = 0

    def feed(self, line: str) -> dict[str, Any] | None:
        """Take one line (without its newline); the message when an event just ended."""
        line = line.rstrip("\r")
        if not line:
            if not self._data:
                return None
            data, self._data = "\n".join(self._data), []
            return json.loads(data)
        if line.startswith(":"):
            self.comments += 1
        elif line.startswith("data:"):
            self._data.append(line[5:].removeprefix(" "))
        return None


@dataclass
class LegacySession:
    """A 2025-11-25 session as the client holds it: its id and what the server offered."""

    capabilities: dict[str, Any]
    token: str | None = None
    client_info: dict[str, Any] = field(default_factory=lambda: dict(CLIENT_INFO))
    session_id: str | None = None
    protocol_version: str = LEGACY_VERSION
    server_info: dict[str, Any] = field(default_factory=dict)
    server_capabilities: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    wire: list[WireMessage] = field(default_factory=list)

    def headers(self) -> dict[str, str]:
        """The headers of every POST after initialize."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": self.protocol_version,
        }
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def initialize_request(self) -> tuple[dict[str, str], dict[str, Any]]:
        """The `initialize` POST (no session yet, and no version header: it is negotiated)."""
        headers = self.headers()
        del headers["MCP-Protocol-Version"]
        params = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": self.capabilities,
            "clientInfo": self.client_info,
        }
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": "initialize", "params": params}
        self.note("client->server", body, "post")
        return headers, body

    def opened(self, status: int, headers: Any, response: dict[str, Any] | None) -> None:
        """Take the initialize response: the session id and the server's offer."""
        if response is not None:
            self.note("server->client", response, "json")
        result = result_of(response, status)
        self.session_id = headers.get(SESSION_HEADER)
        self.protocol_version = result.get("protocolVersion", LEGACY_VERSION)
        self.server_info = result.get("serverInfo") or {}
        self.server_capabilities = result.get("capabilities") or {}

    def initialized_notification(self) -> tuple[dict[str, str], dict[str, Any]]:
        body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.note("client->server", body, "post")
        return self.headers(), body

    def exchange(self, method: str, params: dict[str, Any] | None = None) -> LegacyExchange:
        """A new request in this session, not yet sent."""
        return LegacyExchange(self, method, params or {})

    def note(self, direction: str, message: dict[str, Any], via: str) -> None:
        self.wire.append(WireMessage(direction, message, via, time.perf_counter() - self.started))


@dataclass
class LegacyExchange:
    """One request of a legacy session: its POST, its stream, and the answers POSTed back."""

    session: LegacySession
    method: str
    params: dict[str, Any]
    body: dict[str, Any] = field(default_factory=dict)
    #: Every HTTP POST of this request: the request itself, then each answer.
    rounds: list[Round] = field(default_factory=list)
    #: Every message the server sent for this request: its requests, notifications, result.
    events: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    decoder: SseDecoder = field(default_factory=SseDecoder)
    started: float = 0.0

    def next_request(self) -> tuple[dict[str, str], dict[str, Any]]:
        """The headers and JSON body of the request's POST."""
        self.body = {"jsonrpc": "2.0", "id": next(_ids), "method": self.method}
        if self.params:
            self.body["params"] = self.params
        self.started = time.perf_counter()
        self.session.note("client->server", self.body, "post")
        return self.session.headers(), self.body

    def feed_line(self, line: str) -> dict[str, Any] | None:
        """Take one line of the SSE stream; a server request to answer, if one just arrived."""
        message = self.decoder.feed(line)
        return self.take(message, "sse") if message is not None else None

    def take_json(self, status: int, response: dict[str, Any] | None) -> None:
        """Take a plain JSON response (a call that never asked for input)."""
        if response is None:
            raise McpError(-32603, f"HTTP {status} without a JSON-RPC response", None, status)
        self.take(response, "json", status)

    def take(self, message: dict[str, Any], via: str, status: int = 200) -> dict[str, Any] | None:
        """Take one server message; returns it when it is a request the client must answer."""
        self.session.note("server->client", message, via)
        self.events.append(message)
        if "method" in message:
            return message if "id" in message else None
        if message.get("id") != self.body.get("id"):
            return None
        self.rounds.insert(0, Round(self.body, message, status, time.perf_counter() - self.started))
        self.result = result_of(message, status)
        return None

    def answer(self, request: dict[str, Any], handlers: Handlers) -> Any:
        """The client's answer to a server request: a result, or an awaitable of one."""
        try:
            handler = handlers.for_method(request.get("method", ""))
        except McpError as exc:
            return exc
        return handler(request.get("params") or {})

    def answer_request(
        self, request: dict[str, Any], answer: Any
    ) -> tuple[dict[str, str], dict[str, Any]]:
        """The headers and JSON-RPC response body that answer a server request."""
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        if isinstance(answer, McpError):
            body["error"] = {"code": answer.code, "message": answer.message}
        else:
            body["result"] = answer
        self.session.note("client->server", body, "post")
        return self.session.headers(), body

    def answered(
        self, body: dict[str, Any], status: int, response: dict[str, Any] | None, elapsed_s: float
    ) -> None:
        """Record an answer's POST; a refused answer (not 202) is an error."""
        self.rounds.append(Round(body, response, status, elapsed_s))
        if status != 202:
            error = (response or {}).get("error") or {}
            raise McpError(
                error.get("code", -32603),
                error.get("message", f"answer refused with HTTP {status}"),
                error.get("data"),
                status,
            )

    @property
    def done(self) -> bool:
        return self.result is not None

    @property
    def server_requests(self) -> list[dict[str, Any]]:
        """The requests the server sent on the stream (the questions it asked)."""
        return [m for m in self.events if "method" in m and "id" in m]

    @property
    def text(self) -> str:
        """The text content of the final result."""
        return text_of(self.result)


def _json_or_none(response: httpx.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _is_stream(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


class _LegacyBase(_ClientBase):
    """What both legacy clients share: the session and where answers go."""

    def __init__(self, url: str, *, answer_url: str | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        #: Where answers are POSTed; a load balancer may in effect pick any replica.
        self.answer_url = answer_url or url
        self.session = LegacySession(self.handlers.capabilities(), token=self.token)

    def exchange(self, method: str, params: dict[str, Any] | None = None) -> LegacyExchange:  # type: ignore[override]
        """A new request in the session, not yet sent."""
        return self.session.exchange(method, params)


class LegacyClient(_LegacyBase):
    """A blocking 2025-11-25 client on httpx: `with LegacyClient(url) as c: c.call_tool(...)`."""

    def __init__(self, url: str, *, http: httpx.Client | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        self._http = http or httpx.Client(timeout=30.0)
        self._owns_http = http is None

    def __enter__(self) -> LegacyClient:
        self.initialize()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def initialize(self) -> LegacySession:
        """Open the session: initialize, then notifications/initialized."""
        headers, body = self.session.initialize_request()
        response = self._http.post(self.url, json=body, headers=headers)
        self.session.opened(response.status_code, response.headers, _json_or_none(response))
        headers, body = self.session.initialized_notification()
        self._http.post(self.url, json=body, headers=headers)
        return self.session

    def run(self, exchange: LegacyExchange) -> LegacyExchange:
        """Send the request, answer what the server asks on the stream, until the result."""
        headers, body = exchange.next_request()
        with self._http.stream("POST", self.url, json=body, headers=headers) as response:
            if not _is_stream(response):
                response.read()
                exchange.take_json(response.status_code, _json_or_none(response))
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
        headers, body = exchange.answer_request(request, exchange.answer(request, self.handlers))
        started = time.perf_counter()
        response = self._http.post(self.answer_url, json=body, headers=headers)
        elapsed = time.perf_counter() - started
        exchange.answered(body, response.status_code, _json_or_none(response), elapsed)

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
            if self._owns_http:
                self._http.close()


class AsyncLegacyClient(_LegacyBase):
    """The async twin of `LegacyClient`: `async with AsyncLegacyClient(url) as c: ...`."""

    def __init__(self, url: str, *, http: httpx.AsyncClient | None = None, **options: Any) -> None:
        super().__init__(url, **options)
        self._http = http or httpx.AsyncClient(timeout=30.0)
        self._owns_http = http is None

    async def __aenter__(self) -> AsyncLegacyClient:
        await self.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def initialize(self) -> LegacySession:
        """Open the session: initialize, then notifications/initialized."""
        headers, body = self.session.initialize_request()
        response = await self._http.post(self.url, json=body, headers=headers)
        self.session.opened(response.status_code, response.headers, _json_or_none(response))
        headers, body = self.session.initialized_notification()
        await self._http.post(self.url, json=body, headers=headers)
        return self.session

    async def run(self, exchange: LegacyExchange) -> LegacyExchange:
        """Send the request, answer what the server asks on the stream, until the result."""
        headers, body = exchange.next_request()
        async with self._http.stream("POST", self.url, json=body, headers=headers) as response:
            if not _is_stream(response):
                await response.aread()
                exchange.take_json(response.status_code, _json_or_none(response))
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
        answer = exchange.answer(request, self.handlers)
        if inspect.isawaitable(answer):
            answer = await answer
        headers, body = exchange.answer_request(request, answer)
        started = time.perf_counter()
        response = await self._http.post(self.answer_url, json=body, headers=headers)
        elapsed = time.perf_counter() - started
        exchange.answered(body, response.status_code, _json_or_none(response), elapsed)

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
            if self._owns_http:
                await self._http.aclose()

"""The legacy protocol (2025-11-25) as the client follows it, without I/O.

`LegacySession` holds a session (its id, what the server offered, every message in
`wire`); `LegacyExchange` is one request in it: the POST, the SSE events that come back,
the server's questions and the client's answers, until the result. The reference
clients (`server.client.legacy`) and the load test's users drive the same steps.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from server.client.exchange import CLIENT_INFO
from server.client.handlers import Handlers
from server.client.replies import McpError, Round, result_of, text_of
from server.protocol.headers import SESSION_HEADER, VERSION_HEADER
from server.protocol.versions import LEGACY_VERSION

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
            VERSION_HEADER: self.protocol_version,
        }
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def initialize_request(self) -> tuple[dict[str, str], dict[str, Any]]:
        """The `initialize` POST (no session yet, and no version header: it is negotiated)."""
        headers = self.headers()
        del headers[VERSION_HEADER]
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

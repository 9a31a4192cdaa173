"""Limits on a request as it arrives: its headers' time, size and count, its body's time.

uvicorn closes an idle keep-alive connection (`--idle-timeout-s`) but bounds nothing else
about a request on its way in: a socket that connects and sends nothing, sends its
headers a byte at a time, sends megabytes of headers, or sends its headers and then one
byte of a hundred-byte body, holds a file descriptor and a place under
`--max-connections` for as long as its client likes (and the headers, memory). Each of
those sockets is cheap to open, so a few thousand of them leave every other client with
503. `with_wire_limits` wraps uvicorn's HTTP protocol class (httptools or h11) so that:

- the headers must be complete within `header_timeout_s`, timed from the moment the
  connection opens, and again from the first byte of every later request on it;
- they may take at most `max_header_bytes` (counted before the parser buffers them) and
  `max_header_count` fields; beyond either the answer is 431 and the connection closes;
- the whole request, headers and body, has `body_timeout_s` from its first byte (from the
  connection's opening, for its first request, as the header timeout counts; HAProxy's
  `timeout http-request` counts the same way); a body still arriving then goes on only while
  it has averaged `body_min_rate_bytes_per_s` since its head was complete (the bytes that
  came with the head count), and never past a ceiling: `body_timeout_s` plus the time a
  body of the declared length (or `max_body_bytes`, for a chunked one) takes at that rate.
  A burst followed by silence buys only the time its bytes are worth at the minimum rate,
  a drip under the rate nothing, and no body outlives the ceiling (at the defaults, 10 s
  plus 4 s for a 1 MiB body); late, the answer is 408 and the connection closes.
- after an early answer (a 413 before the body is read), the rest of the body is the
  parser's to read and drop, within the header timeout, and the next head is counted
  from its declared end: a proxy in front sends the whole body all the same, and the
  connection must survive it.

Nearly every request arrives in one read, headers and body together: it starts no timer
of its own and pays a few comparisons here.
"""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass
from typing import Any

#: uvicorn's protocol classes, by the name `--http` takes.
_PROTOCOLS = {
    "h11": "uvicorn.protocols.http.h11_impl:H11Protocol",
    "httptools": "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol",
}
#: The end of a request's headers.
_HEAD_END = b"\r\n\r\n"


def _refusal(status_line: bytes, reason: bytes) -> bytes:
    return (
        status_line
        + b"\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: "
        + str(len(reason)).encode()
        + b"\r\nconnection: close\r\n\r\n"
        + reason
    )


HEADERS_TOO_LARGE = _refusal(
    b"HTTP/1.1 431 Request Header Fields Too Large", b"request headers too large"
)
BODY_TOO_SLOW = _refusal(b"HTTP/1.1 408 Request Timeout", b"request body too slow")


@dataclass(frozen=True)
class WireLimits:
    """How long and how large a request may be while it arrives (see the module)."""

    header_timeout_s: float
    max_header_bytes: int
    max_header_count: int
    body_timeout_s: float
    body_min_rate_bytes_per_s: float
    max_body_bytes: int


def body_deadline_s(
    limits: WireLimits,
    *,
    request_started_s: float,
    head_done_s: float,
    body_bytes: int,
    declared_bytes: int,
) -> float:
    """When a body still arriving is cut, on the clock its times are read from.

    `request_started_s` is the request's first byte, `head_done_s` the moment its head was
    complete, `body_bytes` what has arrived of the body since (with the head included),
    `declared_bytes` its Content-Length (0: chunked). A body may go on past the request's
    `body_timeout_s` only while it has averaged the minimum rate since its head, up to the
    ceiling the module describes.
    """
    rate = limits.body_min_rate_bytes_per_s
    whole_s = request_started_s + limits.body_timeout_s
    expected = (
        declared_bytes if 0 < declared_bytes <= limits.max_body_bytes else limits.max_body_bytes
    )
    ceiling_s = whole_s + expected / rate
    return min(ceiling_s, max(whole_s, head_done_s + body_bytes / rate))


def protocol_class(http: str) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class for `--http` (`auto`: httptools when installed)."""
    if http == "auto":
        try:
            importlib.import_module("httptools")
        except ImportError:
            http = "h11"
        else:
            http = "httptools"
    module, _, name = _PROTOCOLS[http].partition(":")
    return getattr(importlib.import_module(module), name)


def head_size(scope: dict[str, Any]) -> int:
    """Bytes of a parsed request's header fields (names and values)."""
    return sum(len(name) + len(value) for name, value in scope["headers"])


def declared_length(scope: dict[str, Any]) -> int:
    """A request's Content-Length (0 when it has none, or a chunked body)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


def with_wire_limits(base: type[asyncio.Protocol], limits: WireLimits) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's protocol `base` that enforces `limits` on every request.

    Both of uvicorn's protocols create a new request cycle (`self.cycle`) when a request's
    headers are complete, and clear the cycle's `more_body` when its body is, so "headers
    done" and "body done" are seen the same way for either parser.
    """

    receive = base.data_received
    max_header_bytes = limits.max_header_bytes
    max_header_count = limits.max_header_count

    class WireLimitsProtocol(base):  # type: ignore[valid-type, misc]
        wire_limits = limits
        _header_timer: asyncio.TimerHandle | None = None
        #: Bytes of the request whose headers are awaited, received so far.
        _head_bytes = 0
        #: When the request whose headers are awaited (or whose body is) sent its first byte.
        _request_started_s = 0.0
        _body_timer: asyncio.TimerHandle | None = None
        _body_started_s = 0.0
        _body_bytes = 0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_header_timer()

        def data_received(self, data: bytes) -> None:
            if self._header_timer is not None:
                # Headers awaited: count them before the parser buffers them.
                self._head_bytes += len(data)
                if self._head_bytes > max_header_bytes and self._head_too_large(data):
                    # After an early answer the bytes may be the rest of the last body:
                    # nobody waits for an answer to them, so the connection just closes.
                    last = self.cycle
                    self._refuse(None if last is not None and last.more_body else HEADERS_TOO_LARGE)
                    return
            before = self.cycle
            receive(self, data)  # on every request: the base's method without super()
            cycle = self.cycle
            if cycle is not before:
                # A request's headers are complete: it is the application's now.
                if self._header_timer is not None:
                    self._disarm_header_timer()
                else:
                    # Its head came in this one read, on a kept-alive connection.
                    self._request_started_s = self.loop.time()
                if len(cycle.scope["headers"]) > max_header_count or (
                    len(data) > max_header_bytes and head_size(cycle.scope) > max_header_bytes
                ):
                    self._refuse(HEADERS_TOO_LARGE)
                elif cycle.more_body:
                    # The bytes that came with the head are the body's first.
                    end = data.find(_HEAD_END)
                    self._arm_body_timer(cycle, len(data) - end - 4 if end >= 0 else 0)
            elif self.transport.get_protocol() is not self:
                # Upgraded to a WebSocket, handed to another protocol.
                self._disarm_header_timer()
            elif self._header_timer is None:
                if before is None or before.response_complete:
                    # The first bytes of the next request on a kept-alive connection, or
                    # (after an early answer) the rest of the last body, which the parser
                    # reads and drops: the head's count starts after it.
                    self._arm_header_timer()
                    self._head_bytes = len(data) - (
                        declared_length(before.scope)
                        if before is not None and before.more_body
                        else 0
                    )
                elif self._body_timer is not None:
                    self._body_bytes += len(data)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_timer()
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None
            super().connection_lost(exc)

        def _head_too_large(self, data: bytes) -> bool:
            """Whether the headers awaited run past the limit (not only the body after them)."""
            end = data.find(_HEAD_END)
            return end < 0 or self._head_bytes - len(data) + end > max_header_bytes

        def _refuse(self, answer: bytes | None) -> None:
            """Send `answer` (a whole response, or nothing) and close the connection.

            Whatever the application writes after this is dropped: the transport is closing.
            """
            transport = self.transport
            if not transport.is_closing():
                if answer is not None:
                    transport.write(answer)
                transport.close()

        def _arm_header_timer(self) -> None:
            self._head_bytes = 0
            loop = asyncio.get_running_loop()
            self._request_started_s = loop.time()
            self._header_timer = loop.call_later(
                self.wire_limits.header_timeout_s, self._headers_timed_out
            )

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_timed_out(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def _arm_body_timer(self, cycle: Any, with_head_bytes: int) -> None:
            if self._body_timer is not None:
                self._body_timer.cancel()
            loop = asyncio.get_running_loop()
            self._body_started_s = loop.time()
            self._body_bytes = with_head_bytes
            self._body_timer = loop.call_at(self._body_deadline_s(cycle), self._body_due, cycle)

        def _body_deadline_s(self, cycle: Any) -> float:
            return body_deadline_s(
                self.wire_limits,
                request_started_s=self._request_started_s,
                head_done_s=self._body_started_s,
                body_bytes=self._body_bytes,
                declared_bytes=declared_length(cycle.scope),
            )

        def _body_due(self, cycle: Any) -> None:
            """The body's time is up, unless it arrived or came fast enough to earn more."""
            self._body_timer = None
            if self.cycle is not cycle or not cycle.more_body or self.transport.is_closing():
                return
            loop = asyncio.get_running_loop()
            due_s = self._body_deadline_s(cycle)
            if due_s > loop.time():
                self._body_timer = loop.call_at(due_s, self._body_due, cycle)
            else:
                # An application that answered before the body came has said its piece.
                self._refuse(None if cycle.response_started else BODY_TOO_SLOW)

    WireLimitsProtocol.__name__ = f"WireLimits{base.__name__}"
    return WireLimitsProtocol

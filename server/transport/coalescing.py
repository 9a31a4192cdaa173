"""Write coalescing: a response's head and body leave the replica in one write.

uvicorn writes a response in as many pieces as the app sends ASGI messages: the status
line and headers when `http.response.start` arrives, then the body. Each piece is its own
`send` system call and, on a busy connection, its own TCP segment, and the client (or
HAProxy in front) wakes up once for each. Every answer of /mcp is one JSON message sent
as a head and a body in the same step of the event loop, so the replica can send both
at once: one system call, one segment, one wake-up, and nothing else changes.

`with_coalesced_writes` wraps uvicorn's HTTP protocol class (httptools or h11) so that the
transport it writes to holds what is written until the step ends:

- a response that completes in the step (every JSON answer) goes out as one write when it
  completes, before uvicorn goes on to the next request on the connection;
- anything else written in a step (the head of an SSE stream, one of its events) goes out
  at the end of that step, so a stream's head and events are never held back waiting for
  more;
- closing the connection sends what is held first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


class CoalescingTransport:
    """A connection's transport whose writes in one step of the event loop go out as one.

    Everything but writing and closing is the wrapped transport's own.
    """

    __slots__ = ("_call_soon", "_held", "_transport", "_write", "get_protocol", "is_closing")

    #: Asked on every request: the transport's own methods, called without a frame here.
    is_closing: Callable[[], bool]
    get_protocol: Callable[[], asyncio.BaseProtocol]

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._write = transport.write
        self._held: list[bytes] | None = None
        self._call_soon = asyncio.get_running_loop().call_soon
        self.is_closing = transport.is_closing
        self.get_protocol = transport.get_protocol

    def write(self, data: bytes) -> None:
        """Hold `data` until the step ends (or the response completes), after earlier writes."""
        held = self._held
        if held is None:
            self._held = [data]
            # Whatever else is written in this step joins it; the step's end sends it all.
            self._call_soon(self.flush)
        else:
            held.append(data)

    def flush(self) -> None:
        """Send everything held, as one write."""
        held = self._held
        if held is not None:
            self._held = None
            if not self.is_closing():
                self._write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        """Send what is held, then close."""
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        """Send what is held, then end the sending half."""
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        """Close at once: what is held is dropped, as the transport drops its buffer."""
        self._held = None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        held = self._held
        return self._transport.get_write_buffer_size() + sum(map(len, held or ()))

    def __getattr__(self, name: str) -> Any:
        # The rest (reading, flow control, extra info, protocols) is the transport's.
        return getattr(self._transport, name)


def with_coalesced_writes(base: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's protocol `base` whose responses go out in one write each."""

    response_complete = base.on_response_complete  # type: ignore[attr-defined]

    class CoalescingProtocol(base):  # type: ignore[valid-type, misc]
        transport: CoalescingTransport

        def connection_made(self, transport: Any) -> None:
            super().connection_made(CoalescingTransport(transport))

        def on_response_complete(self) -> None:
            # The whole response is written: send it now, before the next request is read.
            self.transport.flush()
            response_complete(self)

    CoalescingProtocol.__name__ = f"Coalescing{base.__name__}"
    return CoalescingProtocol

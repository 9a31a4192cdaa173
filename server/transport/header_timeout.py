"""The header timeout: a connection that does not finish its request headers in time is closed.

uvicorn closes an idle keep-alive connection (`--idle-timeout-s`) but never a socket that
connects and sends nothing, or sends its headers a byte at a time: each such socket holds
a file descriptor and a place under `--max-connections` for as long as its client likes.
`with_header_timeout` wraps uvicorn's HTTP protocol class (httptools or h11) so that a
timer runs from the moment the connection opens, and again from the first byte of every
later request on it, until that request's headers are complete. Bodies are not timed
here: a request in progress is the application's to bound.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

#: uvicorn's protocol classes, by the name `--http` takes.
_PROTOCOLS = {
    "h11": "uvicorn.protocols.http.h11_impl:H11Protocol",
    "httptools": "uvicorn.protocols.http.httptools_impl:HttpToolsProtocol",
}


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


def with_header_timeout(base: type[asyncio.Protocol], timeout_s: float) -> type[asyncio.Protocol]:
    """A subclass of uvicorn's protocol `base` that closes connections slow to send headers.

    Both of uvicorn's protocols create a new request cycle (`self.cycle`) when a request's
    headers are complete, so "headers done" is seen the same way for either parser.
    """

    receive = base.data_received

    class HeaderTimeoutProtocol(base):  # type: ignore[valid-type, misc]
        header_timeout_s = timeout_s
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm_header_timer()

        def data_received(self, data: bytes) -> None:
            before = self.cycle
            receive(self, data)  # on every request: the base's method without super()
            if self.cycle is not before or self.transport.get_protocol() is not self:
                # A request's headers are complete (or the connection was upgraded to a
                # WebSocket, handed to another protocol): it is the application's now.
                if self._header_timer is not None:
                    self._disarm_header_timer()
            elif self._header_timer is None and (before is None or before.response_complete):
                # The first bytes of the next request on a kept-alive connection.
                self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_timer()
            super().connection_lost(exc)

        def _arm_header_timer(self) -> None:
            self._header_timer = asyncio.get_running_loop().call_later(
                self.header_timeout_s, self._headers_timed_out
            )

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_timed_out(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    HeaderTimeoutProtocol.__name__ = f"HeaderTimeout{base.__name__}"
    return HeaderTimeoutProtocol

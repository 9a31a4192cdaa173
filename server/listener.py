"""Where a replica's process listens: the socket, and uvicorn's loop, parser and log.

The replica's behaviour is `ServerConfig`; these are the settings only a process that
serves it needs, stated once like the replica's (`python -m server` makes their flags).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from server.flags import setting


@dataclass(frozen=True)
class Listener:
    """Where a replica's process listens, and with which event loop, HTTP parser and log."""

    host: str = setting(
        "127.0.0.1",
        help="address to listen on; beyond loopback, Host need not name this machine and the "
        "public development keys are refused",
    )
    port: int = setting(8000, help="TCP port to listen on")
    loop: str = setting("auto", help="uvicorn's event loop", choices=("auto", "asyncio", "uvloop"))
    http: str = setting(
        "auto", help="uvicorn's HTTP/1.1 parser", choices=("auto", "h11", "httptools")
    )
    log_level: str = setting("warning", help="uvicorn's log level (debug, info, warning, ...)")

    @property
    def loopback_only(self) -> bool:
        """Whether only this machine can reach the replica (`ServerConfig.loopback_only`)."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

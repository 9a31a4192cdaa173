"""Running one replica under uvicorn, and stopping it within its graceful timeout.

Composes the app with the connection protocol that coalesces writes and bounds how long
and how large a request may be as it arrives, on the socket a `Listener` names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import uvicorn

from server.app import create_app
from server.config import ServerConfig
from server.harness.process import raise_file_limit
from server.listener import Listener
from server.transport.coalescing import with_coalesced_writes
from server.transport.wire_limits import WireLimits, protocol_class, with_wire_limits


def serve_replica(config: ServerConfig, listener: Listener) -> None:
    """Serve one replica until a shutdown signal, then end its held calls and exit."""
    app = create_app(config)
    settings = uvicorn.Config(
        app,
        host=listener.host,
        port=listener.port,
        loop=listener.loop,
        http=with_wire_limits(
            with_coalesced_writes(protocol_class(listener.http)), wire_limits(config)
        ),
        # h11 refuses a head over its own limit (16 KiB) with a 400 before the wire limits
        # see it; at the same limit, they count first and answer 431.
        h11_max_incomplete_event_size=config.max_header_bytes,
        log_level=listener.log_level,
        access_log=False,
        # The replica reads neither the client's address nor the scheme, so uvicorn's
        # X-Forwarded-* rewriting (a middleware on every request) would be work for nothing.
        proxy_headers=False,
        # No "server: uvicorn" on every answer: MCP does not need it, and it tells a
        # scanner the stack.
        server_header=False,
        timeout_graceful_shutdown=math.ceil(config.shutdown_timeout_s),
        limit_concurrency=config.max_connections,
        timeout_keep_alive=math.ceil(config.idle_timeout_s),
    )
    raise_file_limit(config.max_connections)
    _signalling_server(settings, app.state.server.begin_shutdown).run()


def wire_limits(config: ServerConfig) -> WireLimits:
    """The limits on a request arriving at the replica, from its configuration."""
    return WireLimits(
        header_timeout_s=config.header_timeout_s,
        max_header_bytes=config.max_header_bytes,
        max_header_count=config.max_header_count,
        body_timeout_s=config.body_timeout_s,
        body_min_rate_bytes_per_s=config.body_min_rate_bytes_per_s,
        max_body_bytes=config.max_body_bytes,
    )


def _signalling_server(settings: uvicorn.Config, on_exit: Callable[[], None]) -> uvicorn.Server:
    """A uvicorn server that also tells the app when a shutdown signal arrives.

    uvicorn waits for open responses before its lifespan shutdown; the app ends its held
    legacy streams at once instead, so the replica exits within the graceful timeout.
    """

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            on_exit()

    return Server(settings)

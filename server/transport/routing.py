"""How a request reaches its handler: POST /mcp straight, everything else through Starlette.

Every MCP message is a POST to /mcp, so that one route is the replica's hot path. It is
served as a raw ASGI app, its answer sent as two ASGI messages: Starlette's two
middlewares, its router's matching over every route, its endpoint wrappers and a
`Request` per request cost the replica's process measurably more CPU per request. The
handler behind it answers every failure itself (a JSON-RPC error, a 500 for a bug) and
is quiet when the client has gone. Every other request (GET and DELETE on /mcp,
/healthz, /metrics, the lifespan) goes to the Starlette app as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.applications import Starlette
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Lifespan, Receive, Scope, Send

#: The path every MCP message is POSTed to.
MCP_PATH = "/mcp"


class McpApp(Starlette):
    """A Starlette app whose POST /mcp goes to `post_mcp`, a raw ASGI app, directly."""

    def __init__(
        self,
        *,
        post_mcp: ASGIApp,
        routes: Sequence[BaseRoute],
        lifespan: Lifespan[Starlette] | None = None,
    ) -> None:
        super().__init__(routes=routes, lifespan=lifespan)
        self.post_mcp = post_mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and (scope["path"] == MCP_PATH or route_path(scope) == MCP_PATH)
        ):
            await self.post_mcp(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)


def route_path(scope: Scope) -> str:
    """The path a route matches: behind a root path (a proxy's prefix), the rest after it."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path

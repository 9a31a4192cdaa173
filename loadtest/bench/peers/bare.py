"""A bare Starlette endpoint: one POST route, parse the JSON-RPC body, answer JSON.

It passes through Starlette's router and middlewares, as any Starlette route does; the
lab's POST /mcp does not (`server.transport.routing`).
"""

from __future__ import annotations

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def mcp(request: Request) -> Response:
    body = orjson.loads(await request.body())
    answer = {"jsonrpc": "2.0", "id": body.get("id"), "result": {"resultType": "complete"}}
    return Response(orjson.dumps(answer), media_type="application/json")


app = Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])

"""`get_weather` on the official `mcp` SDK's own 2025-11-25 server: the call waits for its answer.

The tool awaits `ctx.elicit(...)`: the SDK sends `elicitation/create` on the call's SSE
stream and keeps the call suspended until the client posts the answer, as the lab's legacy
mode does. Served the SDK's default way for that era: sessions, SSE responses.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("mrtr-bench-sdk-legacy-peer")


class Login(BaseModel):
    """The GitHub login the tool asks for."""

    name: str


@server.tool()
async def get_weather(location: str, ctx: Context) -> str:
    """Current weather for a location; asks for your GitHub login first."""
    answer = await ctx.elicit("Please provide your GitHub username", Login)
    if answer.action != "accept":
        return f"Weather lookup {answer.action}d by the user."
    return f"Weather in {location} for {answer.data.name}: Sunny, 21°C"


app = server.streamable_http_app()

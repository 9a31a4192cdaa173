"""`get_weather` on the official `mcp` SDK: an MRTR round trip as the SDK's users write it.

The tool returns an `InputRequiredResult` asking `github_login`, with its own state (the
SDK seals it with AES-256-GCM at its boundary), and completes when the client retries
with the answer. Served stateless with JSON responses, like the lab's server.
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

server = MCPServer("mrtr-bench-sdk-peer")

LOGIN_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool()
async def get_weather(location: str, ctx: Context) -> str | InputRequiredResult:
    """Current weather for a location; asks for your GitHub login first."""
    answer = (ctx.input_responses or {}).get("github_login")
    content = getattr(answer, "content", None) or {}
    if not content.get("name"):
        ask = ElicitRequest(
            params=ElicitRequestFormParams(
                message="Please provide your GitHub username", requested_schema=LOGIN_SCHEMA
            )
        )
        state = json.dumps({"location": location})
        return InputRequiredResult(input_requests={"github_login": ask}, request_state=state)
    return f"Weather in {location} for {content['name']}: Sunny, 21°C"


app = server.streamable_http_app(stateless_http=True, json_response=True)

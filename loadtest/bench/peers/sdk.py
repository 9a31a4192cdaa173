"""The bench's tools on the official `mcp` SDK: MRTR rounds as the SDK's users write them.

- `get_weather` returns an `InputRequiredResult` asking `github_login`, and completes when
  the client retries with the answer.
- `update_work_item` asks `resolution`; a `Duplicate` asks `duplicate_of` and carries the
  resolution in its request_state; the retry with that state and the answer completes.
- `crunch` does one unit of the lab's hash chain per round and sheds: an
  `InputRequiredResult` carrying only its progress in request_state.

The SDK seals request_state itself (AES-256-GCM under a key of this process) at its
boundary. Served stateless with JSON responses, like the lab's server.
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

from server.tools.crunch import crunch_start, crunch_units

server = MCPServer("mrtr-bench-sdk-peer")

LOGIN_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
RESOLUTION_SCHEMA = {
    "type": "object",
    "properties": {"resolution": {"type": "string"}},
    "required": ["resolution"],
}
DUPLICATE_SCHEMA = {
    "type": "object",
    "properties": {"duplicateOfId": {"type": "number"}},
    "required": ["duplicateOfId"],
}


def _ask(message: str, schema: dict) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _answer(ctx: Context, key: str) -> dict:
    answer = (ctx.input_responses or {}).get(key)
    return getattr(answer, "content", None) or {}


@server.tool()
async def get_weather(location: str, ctx: Context) -> str | InputRequiredResult:
    """Current weather for a location; asks for your GitHub login first."""
    content = _answer(ctx, "github_login")
    if not content.get("name"):
        ask = _ask("Please provide your GitHub username", LOGIN_SCHEMA)
        state = json.dumps({"location": location})
        return InputRequiredResult(input_requests={"github_login": ask}, request_state=state)
    return f"Weather in {location} for {content['name']}: Sunny, 21°C"


@server.tool()
async def update_work_item(
    workItemId: int, fields: dict, ctx: Context
) -> str | InputRequiredResult:
    """Update a work item; resolving a bug asks for its resolution, a duplicate for the original."""
    if fields.get("System.State") != "Resolved":
        return f"Bug #{workItemId} updated"
    carried = json.loads(ctx.request_state) if ctx.request_state else {}
    resolution = carried.get("resolution") or _answer(ctx, "resolution").get("resolution")
    if not resolution:
        ask = _ask(f"How was Bug #{workItemId} resolved?", RESOLUTION_SCHEMA)
        return InputRequiredResult(input_requests={"resolution": ask})
    if resolution != "Duplicate":
        return f"Bug #{workItemId} resolved as {resolution}"
    original = _answer(ctx, "duplicate_of").get("duplicateOfId")
    if original is None:
        ask = _ask("Which work item is the original?", DUPLICATE_SCHEMA)
        state = json.dumps({"resolution": resolution})
        return InputRequiredResult(input_requests={"duplicate_of": ask}, request_state=state)
    return f"Bug #{workItemId} resolved as Duplicate of Bug #{original}"


@server.tool()
async def crunch(units: int, ctx: Context) -> str | InputRequiredResult:
    """Hash work that moves between rounds: one unit per round, the progress in request_state."""
    carried = json.loads(ctx.request_state) if ctx.request_state else {}
    done, digest = carried.get("i", 0), carried.get("h") or crunch_start()
    if done < units:
        digest = crunch_units(digest, done, done + 1)
        done += 1
    if done < units:
        return InputRequiredResult(request_state=json.dumps({"i": done, "h": digest}))
    return f"crunch of {units} units: {digest}"


app = server.streamable_http_app(stateless_http=True, json_response=True)

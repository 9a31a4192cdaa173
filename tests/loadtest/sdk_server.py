"""An MCP server written the way a new user of the official Python SDK writes one: an
`MCPServer` with a name and a `RequestStateSecurity`, its defaults (SSE replies on the
2025-11-25 era), and three MRTR tools of its own that the lab has never seen:

- `book_room` asks a form with `minimum`/`maximum`, an enum, a titled oneOf, a
  `format: email` and a boolean with a default, and refuses an answer that breaks it
  (or one from a domain whose bookings are closed);
- `transfer` asks twice when the amount is high: a code with a `pattern`, then a date;
- `summarize` spends about 10 ms of CPU and asks nothing.

Run: `python tests/loadtest/sdk_server.py PORT [legacy-only]`; it serves
`http://127.0.0.1:PORT/mcp`, with `legacy-only` as a server of the 2025-11-25 era alone.
Two replicas share their requestState key and name unless told otherwise: the environment
variable `SDK_SERVER_NAME` names the server (the state's audience), `SDK_STATE_KEY`
gives the key, or `own` for a key of the process's own (the SDK's default when it is given
none), and `SDK_STATE_TTL_S` how long a state lives (the SDK's default, 600 s).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.request_state import RequestStateSecurity
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

STATE_KEY = os.environ.get("SDK_STATE_KEY", "a test key of thirty-two bytes!!")
STATE_TTL_S = float(os.environ.get("SDK_STATE_TTL_S", "600"))
server = MCPServer(
    os.environ.get("SDK_SERVER_NAME", "rooms-and-money"),
    request_state_security=(
        RequestStateSecurity.ephemeral(ttl=STATE_TTL_S)
        if STATE_KEY == "own"
        else RequestStateSecurity(keys=[STATE_KEY], ttl=STATE_TTL_S)
    ),
)

BOOKING_FORM = {
    "type": "object",
    "properties": {
        "attendees": {"type": "integer", "minimum": 1, "maximum": 20},
        "room": {"type": "string", "enum": ["Atlas", "Borealis", "Cirrus"]},
        "floor": {
            "type": "string",
            "oneOf": [{"const": "g", "title": "Ground"}, {"const": "1", "title": "First"}],
        },
        "email": {"type": "string", "format": "email"},
        "projector": {"type": "boolean", "default": False},
    },
    "required": ["attendees", "room", "email"],
}
CODE_FORM = {
    "type": "object",
    "properties": {"code": {"type": "string", "pattern": "^[0-9]{6}$"}},
    "required": ["code"],
}
DATE_FORM = {
    "type": "object",
    "properties": {"on": {"type": "string", "format": "date"}},
    "required": ["on"],
}
#: A domain whose bookings the server refuses: an answer valid by the form, rejected.
CLOSED_DOMAIN = "closed.example"
#: The amount from which a transfer asks for a code and a date.
HIGH_AMOUNT = 1000


def _ask(message: str, schema: dict[str, Any]) -> ElicitRequest:
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


async def _form(
    ctx: Context, key: str, message: str, schema: dict[str, Any], state: str | None = None
) -> dict[str, Any] | InputRequiredResult:
    """The user's answer to a form: asked on the call's stream on 2025-11-25; on 2026-07-28
    taken from the retry's inputResponses, or asked by ending the round input_required."""
    if ctx.protocol_version == "2025-11-25":
        asked = await ctx.request_context.session.elicit_form(
            message=message, requested_schema=schema, related_request_id=ctx.request_id
        )
        if asked.action != "accept":
            raise ToolError(f"the user chose {asked.action}")
        return dict(asked.content or {})
    answer = (ctx.input_responses or {}).get(key)
    if answer is None:
        return InputRequiredResult(input_requests={key: _ask(message, schema)}, request_state=state)
    if getattr(answer, "action", "accept") != "accept":
        raise ToolError(f"the user chose {answer.action}")
    return dict(getattr(answer, "content", None) or {})


@server.tool()
async def book_room(title: str, ctx: Context) -> str | InputRequiredResult:
    """Book a meeting room; asks who comes, where, and whom to tell."""
    form = await _form(ctx, "booking", "Booking details", BOOKING_FORM)
    if isinstance(form, InputRequiredResult):
        return form
    attendees = form.get("attendees")
    if not isinstance(attendees, int) or not 1 <= attendees <= 20:
        raise ToolError(f"attendees must be between 1 and 20, got {attendees!r}")
    if form.get("room") not in ("Atlas", "Borealis", "Cirrus"):
        raise ToolError(f"no room called {form.get('room')!r}")
    email = str(form.get("email", ""))
    if "@" not in email:
        raise ToolError(f"not an email address: {email!r}")
    if email.lower().endswith("@" + CLOSED_DOMAIN):
        raise ToolError(f"bookings for {CLOSED_DOMAIN} are closed")
    return f"{title}: {form['room']} for {attendees}, confirmation to {form['email']}"


@server.tool()
async def transfer(amount: int, ctx: Context) -> str | InputRequiredResult:
    """Send money; a high amount asks for a code, then a date."""
    if amount < HIGH_AMOUNT:
        return f"sent {amount}"
    code = ctx.request_state
    if not code:
        form = await _form(ctx, "code", "Your 6-digit code", CODE_FORM)
        if isinstance(form, InputRequiredResult):
            return form
        code = str(form.get("code", ""))
        if not re.fullmatch(r"[0-9]{6}", code):
            raise ToolError(f"the code must be six digits, got {code!r}")
    when = await _form(ctx, "date", "When?", DATE_FORM, state=code)
    if isinstance(when, InputRequiredResult):
        return when
    return f"sent {amount} on {when.get('on')}"


@server.tool()
async def summarize(text: str) -> str:
    """Summarize a text (about 10 ms of CPU)."""
    deadline = time.process_time() + 0.010
    while time.process_time() < deadline:
        pass
    return text[:20]


def legacy_only(app: Any) -> Any:
    """`app` as a server built before 2026-07-28 answers: a request of that era is refused
    as an unsupported version, so only 2025-11-25 is spoken."""

    async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"mcp-protocol-version") == b"2026-07-28":
            error = {"code": -32600, "message": "Unsupported protocol version"}
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
            head = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 400, "headers": head})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return serve


if __name__ == "__main__":
    # PORT [legacy-only]
    app = server.streamable_http_app()
    if sys.argv[2:] == ["legacy-only"]:
        app = legacy_only(app)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")

"""The floor: the least a server can do and still answer the bench's rounds as the lab does.

A raw ASGI app, as the lab's POST /mcp is (no router, no middleware), that parses the body
and does only the requestState work each round needs, with the lab's own `StateSealer`
and arguments digest: `seal` seals the answer it was sent, `open` opens the state it was
sent (every binding checked), `shed` opens and seals again, after one unit of `crunch`'s
hash chain. Its answers are the lab's, byte for byte in size: the same questions, a state
sealed the same way, the same result shapes.

What it leaves out is everything else a real server does: no Host, Origin or
authorization check, no header or protocol-version rules, no JSON-RPC validation, no
argument schemas, no answer validation, no handler, no metrics. Beside `bare` and `lab` in
one bench run (`--servers bare,floor,lab`) it splits the lab's gap to bare in two: what
sealing and opening cost live (floor over bare), and what the rest of the lab costs
(lab over floor).
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.types import Receive, Scope, Send

from server.config import ServerConfig
from server.mrtr.state import Origin, StateSealer
from server.protocol.inputs import elicitation
from server.tools.crunch import crunch_start, crunch_units
from server.tools.demo import DUPLICATE_SCHEMA, LOGIN_SCHEMA
from server.transport.auth import ANONYMOUS
from server.transport.streamable import JsonMessageResponse, read_body

#: The lab's defaults: its state keys (MRTR_STATE_KEYS) and its limit on a body.
CONFIG = ServerConfig()
SEALER = StateSealer(CONFIG.state_keys, ttl_s=600)
LOGIN = {"github_login": elicitation("Please provide your GitHub username", LOGIN_SCHEMA).to_wire()}
DUPLICATE = {
    "duplicate_of": elicitation(
        "Since this is a duplicate, which work item is the original?", DUPLICATE_SCHEMA
    ).to_wire()
}


def _origin(params: dict[str, Any]) -> Origin:
    return Origin.of(ANONYMOUS, "tools/call", params["name"], params["arguments"])


def answer(params: dict[str, Any]) -> dict[str, Any]:
    """The result of one round: which round it is, from the tool and what the body carries."""
    tool = params["name"]
    if tool == "get_weather":
        if "inputResponses" not in params:
            return {"resultType": "input_required", "inputRequests": LOGIN}
        name = params["inputResponses"]["github_login"]["content"]["name"]
        text = f"Weather in {params['arguments']['location']} for {name}: Sunny, 21°C"
        return {
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "resultType": "complete",
        }
    origin = _origin(params)
    opened = SEALER.open(params["requestState"], origin) if "requestState" in params else None
    if tool == "crunch":
        fresh = {"i": 0, "h": crunch_start(), "replicas": []}
        state: dict[str, Any] = opened.tool_state if opened else fresh
        state["h"] = crunch_units(state["h"], state["i"], state["i"] + 1)
        state["i"] += 1
        state["replicas"].append("floor")
        token = SEALER.seal(origin, round=0, answers={}, tool_state=state)
        return {"resultType": "input_required", "requestState": token}
    if opened is None:
        answers = params["inputResponses"]
        token = SEALER.seal(origin, round=1, answers=answers, tool_state={}, asked=DUPLICATE)
        return {"resultType": "input_required", "inputRequests": DUPLICATE, "requestState": token}
    original = params["inputResponses"]["duplicate_of"]["content"]["duplicateOfId"]
    text = f"Bug #{params['arguments']['workItemId']} resolved as Duplicate of #{original}"
    return {
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "resultType": "complete",
    }


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """POST: one JSON-RPC `tools/call` in, its result out (anything else is not served)."""
    if scope["type"] != "http":
        return
    request = orjson.loads(await read_body(receive, {}, CONFIG.max_body_bytes))
    result = answer(request["params"])
    out = orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
    await JsonMessageResponse(out).write(send)

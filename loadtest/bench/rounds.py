"""The MRTR rounds the benchmark times, one of each kind, as 2026-07-28 `tools/call` requests.

| kind     | request                                          | the server ...                     |
|----------|--------------------------------------------------|------------------------------------|
| `round1` | `get_weather`, first round                       | asks `github_login`; no state      |
| `retry`  | `get_weather` retried with the login answered    | completes (the seed's round trip)  |
| `seal`   | `update_work_item` round 2 (resolution answered) | asks `duplicate_of`, seals a state |
| `open`   | `update_work_item` round 3 (state + answer)      | opens the state and completes      |
| `shed`   | `crunch` retried with its state, nothing asked   | opens, does a unit of work, sheds  |

Every server is walked through the conversation once to get each kind's body with its own
requestState, so the timed request is exactly what a client would send it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from server.protocol.headers import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    METHOD_HEADER,
    NAME_HEADER,
    VERSION_HEADER,
)
from server.protocol.versions import MODERN_VERSION

META = {
    META_VERSION: MODERN_VERSION,
    META_CLIENT_INFO: {"name": "bench", "version": "1"},
    META_CAPABILITIES: {"elicitation": {"form": {}}},
}
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    VERSION_HEADER: MODERN_VERSION,
    METHOD_HEADER: "tools/call",
}
WORK_ITEM = {"workItemId": 4242, "fields": {"System.State": "Resolved"}}
#: `crunch` units: far more than a timed run sheds through, one unit per round.
CRUNCH_UNITS = 1_000_000
#: Units the lab's `crunch` hashes per round before it sheds (`--shed-every-units`): one,
#: so the `shed` round is all requestState and request path, and the tool's own work
#: (one SHA-256 of 40 bytes, timed by `loadtest.bench.microbench`) is negligible beside it.
SHED_EVERY_UNITS = 1
#: The lab's rate per principal in the bench. wrk (and the microbenchmark) send every round
#: as one principal, thousands a second, far beyond a replica's default (100 a second): the
#: lab keeps its token bucket, so its cost is timed, at a rate no run reaches, so nothing
#: is refused.
BENCH_RATE_PER_S = 1e9


@dataclass(frozen=True)
class Round:
    """One timed request: its kind, the tool it calls, its body and the answer expected."""

    kind: str
    tool: str
    body: dict[str, Any]
    expect: str  # the resultType a correct answer has

    @property
    def headers(self) -> dict[str, str]:
        return headers_for(self.tool)


KINDS = ("round1", "retry", "seal", "open", "shed")


def headers_for(tool: str) -> dict[str, str]:
    """The HTTP headers of a 2026-07-28 `tools/call` of `tool`."""
    return {**HEADERS, NAME_HEADER: tool}


def call_body(rid: int, tool: str = "get_weather", arguments: Any = None, **extra: Any) -> dict:
    """A `tools/call` with this JSON-RPC id; `extra` adds params (answers, requestState)."""
    if arguments is None:
        arguments = {"location": "Paris"}
    params = {"name": tool, "arguments": arguments, "_meta": META, **extra}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def post(url: str, body: dict[str, Any], http: Any = httpx) -> dict[str, Any]:
    """The result of one request; an HTTP or JSON-RPC error raises.

    `http` is anything with httpx's `post`: httpx itself, or a client of an app in process.
    """
    tool = body["params"]["name"]
    bounded = {"timeout": 10} if http is httpx else {}  # an in-process client has its own
    reply = http.post(url, json=body, headers=headers_for(tool), **bounded)
    reply.raise_for_status()
    document = reply.json()
    if "result" not in document:
        raise RuntimeError(f"{url} answered {tool} with {document.get('error')}")
    return document["result"]


def _accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def _state(result: dict[str, Any]) -> dict[str, Any]:
    return {"requestState": result["requestState"]} if "requestState" in result else {}


def rounds_for(url: str, *, ceiling: bool = False, http: Any = httpx) -> dict[str, Round]:
    """Each round kind's body for the server at `url`, carrying that server's own state.

    `ceiling` is for the bare endpoint, which answers every body `complete`: it gets the
    same bodies (as long as the lab's) without a conversation.
    """
    weather = call_body(1)
    login = {"github_login": _accept(name="octocat")}
    resolved = {"resolution": _accept(resolution="Duplicate")}
    seal = call_body(2, "update_work_item", WORK_ITEM, inputResponses=resolved)
    crunch = call_body(3, "crunch", {"units": CRUNCH_UNITS})
    if ceiling:
        placeholder = {"requestState": "k." + "A" * 400}
        open_ = call_body(4, "update_work_item", WORK_ITEM, **placeholder)
        shed = call_body(5, "crunch", {"units": CRUNCH_UNITS}, **placeholder)
        retry = call_body(6, "get_weather", inputResponses=login)
        bodies = {"round1": weather, "retry": retry, "seal": seal, "open": open_, "shed": shed}
        return {k: Round(k, b["params"]["name"], b, "complete") for k, b in bodies.items()}
    retry = call_body(6, "get_weather", inputResponses=login, **_state(post(url, weather, http)))
    sealed = post(url, seal, http)
    answered = {"duplicate_of": _accept(duplicateOfId=17)}
    open_ = call_body(4, "update_work_item", WORK_ITEM, inputResponses=answered, **_state(sealed))
    shed = call_body(5, "crunch", {"units": CRUNCH_UNITS}, **_state(post(url, crunch, http)))
    return {
        "round1": Round("round1", "get_weather", weather, "input_required"),
        "retry": Round("retry", "get_weather", retry, "complete"),
        "seal": Round("seal", "update_work_item", seal, "input_required"),
        "open": Round("open", "update_work_item", open_, "complete"),
        "shed": Round("shed", "crunch", shed, "input_required"),
    }


def check(url: str, rounds: dict[str, Round]) -> None:
    """Raise unless every round answers as it should: the right resultType, state where due."""
    for r in rounds.values():
        result = post(url, r.body)
        got = result.get("resultType", "complete")
        if got != r.expect:
            raise RuntimeError(f"{url}: {r.kind} answered {got}, expected {r.expect}")
        stated = isinstance(result.get("requestState"), str)
        if r.kind in ("seal", "shed") and r.expect == "input_required" and not stated:
            raise RuntimeError(f"{url}: {r.kind} carried no requestState")
        if r.kind == "shed" and result.get("inputRequests"):
            raise RuntimeError(f"{url}: a shedding round asked the user something")

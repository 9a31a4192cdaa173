"""MCP traffic as a notebook shows it: JSON messages, rounds as tables, a user who answers.

The notebooks print real requests and responses. A sealed `requestState` is a long run of
base64 that says nothing to a human, so `show` shortens it (and any other long opaque
string) to its first characters and its length; everything else is printed as sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from server.client import Exchange, accept

#: Opaque strings longer than this are shortened when shown.
SHORTEN_OVER_CHARS = 48


def shorten(value: Any, limit: int = SHORTEN_OVER_CHARS) -> Any:
    """`value` with every long string cut to its start and its length, recursively."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:24]}... ({len(value)} chars)"
    if isinstance(value, dict):
        return {k: shorten(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten(v, limit) for v in value]
    return value


def without_meta(message: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC message without `params._meta`, which repeats on every request."""
    params = message.get("params")
    if not isinstance(params, dict) or "_meta" not in params:
        return message
    return {**message, "params": {k: v for k, v in params.items() if k != "_meta"}}


def show(message: dict[str, Any], *, meta: bool = False) -> None:
    """Print a JSON-RPC message as indented JSON, long tokens shortened."""
    print(json.dumps(shorten(message if meta else without_meta(message)), indent=2))


def body_bytes(message: dict[str, Any] | None) -> int:
    """Size of a message as compact JSON, in bytes (about what goes on the wire)."""
    if message is None:
        return 0
    return len(json.dumps(message, separators=(",", ":")).encode())


def rounds_table(exchange: Exchange, served_by: list[str] | None = None) -> pd.DataFrame:
    """One row per round of an MRTR exchange: who served it, what went out, what came
    back, sizes. `served_by` names the replicas where no load balancer named them."""
    rows = []
    for number, wire_round in enumerate(exchange.rounds, start=1):
        named = served_by[number - 1] if served_by else wire_round.served_by
        params = wire_round.request.get("params", {})
        result = (wire_round.response or {}).get("result") or {}
        sent_state = params.get("requestState")
        got_state = result.get("requestState")
        rows.append(
            {
                "round": number,
                "served by": named or "",
                "answers sent": ", ".join(params.get("inputResponses", {})) or "-",
                "requestState sent (bytes)": len(sent_state) if sent_state else 0,
                "result type": result.get("resultType", "error"),
                "questions asked": ", ".join(result.get("inputRequests", {})) or "-",
                "requestState returned (bytes)": len(got_state) if got_state else 0,
                "request (bytes)": body_bytes(wire_round.request),
                "response (bytes)": body_bytes(wire_round.response),
            }
        )
    return pd.DataFrame(rows).set_index("round")


def form_filler(**answers: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An elicitation handler that fills each form from `answers`, by the schema's fields.

    `form_filler(name="octocat", resolution="Duplicate")` accepts a form asking for
    `name` with octocat, one asking for `resolution` with Duplicate, and so on.
    """

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        fields = (params.get("requestedSchema") or {}).get("properties", {})
        return accept(**{field: answers[field] for field in fields if field in answers})

    return elicit

"""The MCP requests the benchmark times: 2026-07-28 `tools/call` bodies and headers."""

from __future__ import annotations

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
    NAME_HEADER: "get_weather",
}


def call_body(rid: int, **extra: Any) -> dict[str, Any]:
    """A `get_weather` call with this JSON-RPC id; `extra` adds params (answers, state)."""
    params = {"name": "get_weather", "arguments": {"location": "Paris"}, "_meta": META, **extra}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def round_bodies(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first-round body, and a retry body answering it with the server's own state."""
    first = call_body(1)
    reply = httpx.post(url, json=first, headers=HEADERS, timeout=10).json()
    result = reply.get("result") or {}
    extra: dict[str, Any] = {
        "inputResponses": {"github_login": {"action": "accept", "content": {"name": "octocat"}}}
    }
    if result.get("resultType") == "input_required" and "requestState" in result:
        extra["requestState"] = result["requestState"]
    return first, call_body(2, **extra)

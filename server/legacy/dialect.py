"""What makes a request legacy (2025-11-25), and how that era spells its messages.

The same endpoint serves both eras. A request is legacy by its `MCP-Protocol-Version`
header or, without one, by its shape (an `initialize`, or a session id); its results drop
the fields 2026-07-28 added.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.protocol.headers import SESSION_HEADER, VERSION_HEADER, VERSION_KEY, header
from server.protocol.versions import LEGACY_VERSION

#: Methods whose handlers may ask for input, and so may hold an SSE stream.
HOLDING_METHODS = {"tools/call", "prompts/get", "resources/read"}
#: Catalog methods served under 2025-11-25, from the shared method table.
CATALOG_METHODS = (
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "completion/complete",
)
#: Result fields of protocol 2026-07-28 that 2025-11-25 does not have.
MODERN_RESULT_FIELDS = ("resultType", "ttlMs", "cacheScope")
KEEPALIVE = b": keep-alive\n\n"
INSTRUCTIONS = (
    f"MRTR Lab, legacy mode ({LEGACY_VERSION}): a tool that needs input answers tools/call with an "
    "SSE stream, sends elicitation/create, sampling/createMessage or roots/list requests on "
    "it and waits; POST each JSON-RPC response with your Mcp-Session-Id."
)


def is_legacy_request(headers: Mapping[str, str], payload: Any) -> bool:
    """Whether a POST speaks 2025-11-25: by its version header, else by its shape.

    Without an `MCP-Protocol-Version` header, an `initialize` or a request carrying a
    session id is legacy; anything else is left to the 2026-07-28 rules (which require the
    header). `headers` has lowercase names, as `request_headers` builds them.
    """
    version = headers.get(VERSION_KEY)
    if version is not None:
        return version.strip() == LEGACY_VERSION
    if header(headers, SESSION_HEADER):
        return True
    return isinstance(payload, dict) and payload.get("method") == "initialize"


def ends_legacy_session(headers: Mapping[str, str]) -> bool:
    """Whether a DELETE names a legacy session (else it is 405, as under 2026-07-28)."""
    version = header(headers, VERSION_HEADER)
    return bool(header(headers, SESSION_HEADER)) and version in (None, LEGACY_VERSION)


def legacy_result(result: dict[str, Any]) -> dict[str, Any]:
    """A result as 2025-11-25 spells it: without the 2026-07-28 result fields."""
    for name in MODERN_RESULT_FIELDS:
        result.pop(name, None)
    return result

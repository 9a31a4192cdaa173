"""What comes back to a client: results, JSON-RPC errors, and each round as it went.

The reference clients record every HTTP round trip as a `Round` (request and response
JSON, status, time, and the replica that served it when a load balancer says which) so
notebooks can show the wire traffic, and turn error responses into `McpError` with the
HTTP status they came with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from server.protocol.jsonrpc import json_object


class McpError(Exception):
    """A JSON-RPC error from the server (or a transport failure), with its HTTP status."""

    def __init__(self, code: int, message: str, data: Any = None, http_status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status


def result_of(response: dict[str, Any] | None, status: int) -> dict[str, Any]:
    """The result of a JSON-RPC response, or the McpError it carries instead."""
    if response is None:
        raise McpError(-32603, f"HTTP {status} without a JSON-RPC response", None, status)
    if "error" in response:
        error = response["error"] or {}
        if not isinstance(error, dict):
            # A server's fault, said as one: a JSON-RPC error is an object.
            said = f"the server's error is not a JSON-RPC error object: {str(error)[:200]!r}"
            raise McpError(-32603, said, None, status)
        raise McpError(
            error.get("code", -32603), error.get("message", ""), error.get("data"), status
        )
    result = response.get("result")
    if not isinstance(result, dict):
        raise McpError(-32603, "response without a result object", None, status)
    return result


def text_of(result: dict[str, Any] | None) -> str:
    """The text content of a tool result."""
    content = (result or {}).get("content") or []
    return "".join(c.get("text", "") for c in content if c.get("type") == "text")


#: The response header in which a load balancer in front of several replicas names the one
#: that answered (the lab's HAProxy sets it; a replica alone does not).
SERVED_BY_HEADER = "X-Served-By"


class TooManyRounds(McpError):
    """The server kept asking past the client's round cap."""


@dataclass
class Round:
    """One HTTP round trip of a logical request, as it went over the wire.

    `served_by` is the replica that answered, as the load balancer named it in
    `SERVED_BY_HEADER`; None when nothing named it.
    """

    request: dict[str, Any]
    response: dict[str, Any] | None
    http_status: int
    elapsed_s: float
    served_by: str | None = None


def parse_body(response: httpx.Response) -> dict[str, Any] | None:
    """The JSON-RPC response in an HTTP response, from JSON or from the last SSE event."""
    return reply_message(response.headers.get("content-type", ""), response.content)


def reply_message(content_type: str, content: bytes) -> dict[str, Any] | None:
    """The JSON-RPC response a reply body carries: the body itself when it is JSON, or the
    last response event when the server chose to answer as an SSE stream (2025-11-25 lets
    a server answer any POST either way; the official SDK streams by default)."""
    if not content_type.startswith("text/event-stream"):
        return json_object(content)
    message = None
    for line in content.decode(errors="replace").splitlines():
        if line.startswith("data:"):
            candidate = json_object(line[5:].strip())
            if candidate is not None and ("result" in candidate or "error" in candidate):
                message = candidate
    return message

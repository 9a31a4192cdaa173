"""Why a tool call failed, in the server's own words.

A call fails at the end of a round in one of two ways: the tool's result says `isError`
(its text says why), or the request gets a JSON-RPC error (its code and message say
why). When that round carried the user's answers (an MRTR retry with `inputResponses`,
or a legacy call whose questions were answered), the server has rejected an answer more
likely than anything else, and the failure says so first.
"""

from __future__ import annotations

from typing import Any

from server.client import McpError, text_of

#: What a failure keeps of the server's text.
FAILURE_TEXT_CHARS = 300
#: How a failure that followed the user's answers begins.
ANSWER_REJECTED = "answer rejected"


def tool_error_failure(result: dict[str, Any], *, after_answers: bool) -> str:
    """A result with `isError`, as a failure carrying the tool's own text."""
    text = text_of(result).strip()[:FAILURE_TEXT_CHARS]
    said = f"tool returned isError: {text}" if text else "tool returned isError"
    return _after(said, after_answers)


def rpc_error_failure(error: McpError, *, after_answers: bool) -> str:
    """A JSON-RPC error, as a failure carrying its code and the server's message."""
    return _after(f"{error.code}: {error.message[:FAILURE_TEXT_CHARS]}", after_answers)


def _after(said: str, after_answers: bool) -> str:
    return f"{ANSWER_REJECTED}: {said}" if after_answers else said

"""Content blocks and complete results, as MCP puts them on the wire."""

from __future__ import annotations

from typing import Any


def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def tool_result(
    value: str, *, is_error: bool = False, structured: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A complete CallToolResult with one text block (and structured content, if given)."""
    result: dict[str, Any] = {"content": [text(value)], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def prompt_result(description: str, *messages: str) -> dict[str, Any]:
    """A complete GetPromptResult of user text messages."""
    return {
        "description": description,
        "messages": [{"role": "user", "content": text(m)} for m in messages],
    }


def resource_result(uri: str, mime_type: str, value: str) -> dict[str, Any]:
    """A complete ReadResourceResult with one text content."""
    return {"contents": [{"uri": uri, "mimeType": mime_type, "text": value}]}

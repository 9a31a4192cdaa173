"""The conformance suite's fixtures for the 2025-11-25 scenarios (sampling, logging, forms).

Served only with `--conformance`, beside `server.tools.conformance`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from server.core.catalog import Catalog
from server.core.context import Context
from server.protocol.content import tool_result

USER_INFO_SCHEMA = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
SEP1034_DEFAULTS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}


def _titled(prefix: str, titles: list[str]) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{i}", "title": t} for i, t in enumerate(titles, start=1)]


SEP1330_ENUMS_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": _titled("value", ["First Option", "Second Option", "Third Option"]),
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {"anyOf": _titled("value", ["First Choice", "Second Choice", "Third Choice"])},
        },
    },
}


def add_legacy_tools(catalog: Catalog) -> None:
    """The tools the 2025-11-25 scenarios call; under that protocol they ask on the stream."""

    @catalog.tool(
        "test_elicitation",
        "Asks the user for a username and an email.",
        {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    )
    async def legacy_elicitation(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("user_info", ctx.arguments["message"], USER_INFO_SCHEMA)
        content = json.dumps(answer.content)
        return tool_result(f"User response: action={answer.action}, content={content}")

    @catalog.tool(
        "test_sampling",
        "Asks the client's LLM to answer a prompt.",
        {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    )
    async def legacy_sampling(ctx: Context) -> dict[str, Any]:
        answer = await ctx.sample("llm_response", ctx.arguments["prompt"], max_tokens=100)
        return tool_result(f"LLM response: {answer.text}")

    @catalog.tool("test_tool_with_logging", "Logs three info messages, 50 ms apart.")
    async def with_logging(ctx: Context) -> dict[str, Any]:
        steps = ("Tool execution started", "Tool processing data", "Tool execution completed")
        for i, step in enumerate(steps):
            if i:
                await asyncio.sleep(0.05)
            await ctx.log("info", step)
        return tool_result("Logging tool completed")

    @catalog.tool("test_elicitation_sep1034_defaults", "Asks a form whose fields have defaults.")
    async def sep1034_defaults(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("defaults", "Please review your details", SEP1034_DEFAULTS_SCHEMA)
        content = json.dumps(answer.content)
        return tool_result(f"Elicitation completed: action={answer.action}, content={content}")

    @catalog.tool("test_elicitation_sep1330_enums", "Asks a form with every kind of enum.")
    async def sep1330_enums(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("enums", "Please choose your options", SEP1330_ENUMS_SCHEMA)
        content = json.dumps(answer.content)
        return tool_result(f"Elicitation completed: action={answer.action}, content={content}")

"""The conformance suite's fixtures for the tasks extension scenarios (`tasks-*`).

Served only with `--conformance`, beside `server.tools.conformance`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from server.core.catalog import Catalog
from server.core.context import Context
from server.protocol.content import tool_result
from server.protocol.inputs import elicitation
from server.protocol.jsonrpc import INTERNAL_ERROR, RpcError

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
#: How often a long fixture task reports progress (and so notices a cancellation).
TASK_TICK_S = 0.25
CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
OPTIONAL_TASK = {"taskSupport": "optional"}
REQUIRED_TASK = {"taskSupport": "required"}


def add_task_tools(catalog: Catalog) -> None:
    """The fixtures of the tasks extension scenarios (`tasks-*`)."""

    @catalog.tool("greet", "Says hello (sync only).", NAME_SCHEMA)
    async def greet(ctx: Context) -> dict[str, Any]:
        return tool_result(f"Hello, {ctx.arguments['name']}!")

    @catalog.tool(
        "slow_compute",
        "Sleeps `seconds`, then returns; runs as a task.",
        {
            "type": "object",
            "properties": {
                "seconds": {"type": "number", "minimum": 0, "maximum": 600},
                "label": {"type": "string"},
            },
            "required": ["seconds"],
        },
        execution=OPTIONAL_TASK,
    )
    async def slow_compute(ctx: Context) -> dict[str, Any]:
        await ctx.become_task()
        seconds = float(ctx.arguments["seconds"])
        label = ctx.arguments.get("label", "slow_compute")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (left := deadline - loop.time()) > 0:
            await ctx.progress(seconds - left, seconds, f"{label}: computing")
            await asyncio.sleep(min(TASK_TICK_S, left))
        return tool_result(f"{label}: computed in {seconds:g} s")

    @catalog.tool("failing_job", "Fails as a tool after about a second.", execution=REQUIRED_TASK)
    async def failing_job(ctx: Context) -> dict[str, Any]:
        await ctx.become_task()
        await asyncio.sleep(1.0)
        return tool_result("failing_job failed, as it always does", is_error=True)

    @catalog.tool("protocol_error_job", "Fails with a protocol error.", execution=OPTIONAL_TASK)
    async def protocol_error_job(ctx: Context) -> dict[str, Any]:
        await ctx.become_task()
        raise RpcError(INTERNAL_ERROR, "protocol_error_job failed with a protocol error")

    @catalog.tool(
        "confirm_delete",
        "Asks for confirmation, then deletes (pretends to).",
        {"type": "object", "properties": {"filename": {"type": "string"}}},
        execution=OPTIONAL_TASK,
    )
    async def confirm_delete(ctx: Context) -> dict[str, Any]:
        await ctx.become_task()
        filename = ctx.arguments.get("filename", "the file")
        answer = await ctx.elicit("confirm_delete", f"Delete {filename}?", CONFIRM_SCHEMA)
        if answer.accepted and answer.content["confirm"]:
            return tool_result(f"Deleted {filename}")
        return tool_result(f"Kept {filename}")

    @catalog.tool("multi_input", "Asks two things at once.", execution=OPTIONAL_TASK)
    async def multi_input(ctx: Context) -> dict[str, Any]:
        await ctx.become_task()
        answers = await ctx.ask(
            user_name=elicitation("What is your name?", NAME_SCHEMA),
            confirm=elicitation("Confirm?", CONFIRM_SCHEMA),
        )
        name = answers["user_name"].content.get("name", "stranger")
        return tool_result(f"{name} confirmed: {answers['confirm'].content.get('confirm')}")

    @catalog.tool(
        "test_tool_with_task",
        "Asks your name the MRTR way, then continues as a task.",
        execution=REQUIRED_TASK,
    )
    async def tool_with_task(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("user_name", "What is your name?", NAME_SCHEMA)
        await ctx.become_task("Greeting in the background.")
        await asyncio.sleep(TASK_TICK_S)
        return tool_result(f"Hello, {answer.content.get('name', 'stranger')}, from a task!")

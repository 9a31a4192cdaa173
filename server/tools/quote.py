"""A tool that computes: `quote {cpu_ms}` asks one question and spends CPU in each round.

The other demo tools do almost nothing but ask, so a replica serves thousands of their
rounds a second and a load generator on the same laptop runs out of breath first. A
real tool parses, validates and prices; `quote` stands for it with `cpu_ms` of CPU time
in each of its two rounds (before asking, and after the answer), in both protocols, so
that the calibration can load a replica and check the simulation's queueing.

A few milliseconds run on the event loop, as the calibration measures them; more run in
the replica's worker processes, slice by slice (`server.core.cpu_pool`), so that a big
quote holds no other request. `QUOTE_MAX_CPU_MS` caps a round (the input schema says so,
and a larger `cpu_ms` is refused as invalid params naming it).
"""

from __future__ import annotations

import time
from typing import Any

from server.core.context import Context
from server.core.cpu_pool import SLICE_MS
from server.protocol.content import tool_result
from server.tools.crunch import crunch_start, crunch_units

#: The most CPU a quote may be asked to spend per round, milliseconds.
QUOTE_MAX_CPU_MS = 1000
QUOTE_SCHEMA = {
    "type": "object",
    "properties": {"cpu_ms": {"type": "number", "minimum": 0, "maximum": QUOTE_MAX_CPU_MS}},
    "required": ["cpu_ms"],
}
_LOGIN_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def spend_cpu(cpu_ms: float) -> None:
    """Keep this process's CPU busy for `cpu_ms` milliseconds of CPU time (not wall time, so
    a busy machine stretches it the way it stretches real work)."""
    start = time.process_time()
    digest = crunch_start()
    while (time.process_time() - start) * 1000 < cpu_ms:
        digest = crunch_units(digest, 0, 50)


async def price(ctx: Context, cpu_ms: float) -> None:
    """Spend one round's `cpu_ms`: on the loop when it is little, else in the worker pool.

    Stops early when the client has gone: nobody would read the quote.
    """
    pool = ctx.replica.cpu
    if pool is None or pool.inline(cpu_ms):
        spend_cpu(cpu_ms)
        return
    with pool.share(ctx.principal):
        left_ms = cpu_ms
        while left_ms > 0:
            step_ms = min(left_ms, SLICE_MS)
            await pool.run(spend_cpu, step_ms, cost_ms=step_ms)
            left_ms -= step_ms
            if await ctx.abandoned():
                return


async def quote(ctx: Context) -> dict[str, Any]:
    cpu_ms = ctx.arguments["cpu_ms"]
    # An MRTR retry runs the handler from the top: the first round's work, done once, is
    # remembered in the state so that every round costs the same.
    if not ctx.state.get("priced"):
        await price(ctx, cpu_ms)
        ctx.state["priced"] = True
    login = await ctx.elicit("github_login", "Please provide your GitHub username", _LOGIN_SCHEMA)
    if not login.accepted:
        return tool_result(f"Quote {login.action}d by the user.", is_error=True)
    await price(ctx, cpu_ms)
    return tool_result(f"Quote for {login.content['name']}: {cpu_ms:g} ms of pricing")

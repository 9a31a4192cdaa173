"""One principal hoarding legacy streams: the memory it can hold is bounded by its limit.

Under 2025-11-25 every unanswered `tools/call` that asks the user keeps a coroutine, its
objects and an SSE connection on the replica (tens of kilobytes) for as long as nobody
answers. Here one principal opens `attempts` `get_weather` calls and answers none, against
a replica started with `--max-held-calls-per-principal`; the calls beyond the limit are
refused with HTTP 429, so what the principal holds, in the replica's resident memory
(VmRSS) and in its object-graph estimate (`/healthz` `waiting_memory_bytes`), stops at
the limit. Another principal's call is then still held: the limit is per principal.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from loadtest.probes.held_memory import BATCH, rss_bytes, until_held, waiting
from server.client import AsyncLegacyClient, Handlers, accept


def hoard(base_url: str, pid: int, tokens: tuple[str, str], attempts: int) -> dict[str, Any]:
    """Open `attempts` held calls as the first token's principal, then one as the second's.

    What was held and refused, and the replica's memory growth while the calls wait.
    """
    return asyncio.run(_hoard(f"{base_url}/mcp", base_url, pid, tokens, attempts))


async def _hoard(
    url: str, base_url: str, pid: int, tokens: tuple[str, str], attempts: int
) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    handlers = Handlers(elicit=lambda params: accept(name="octocat"))
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        hoarder, other = (
            AsyncLegacyClient(url, http=http, handlers=handlers, token=token) for token in tokens
        )
        await hoarder.initialize()
        await other.initialize()
        held: list[int] = []
        refused: list[int] = []

        async def hold(client: AsyncLegacyClient, i: int) -> None:
            """Open a call; keep its stream open, unanswered, until cancelled."""
            params = {"name": "get_weather", "arguments": {"location": f"c{i}"}}
            exchange = client.exchange("tools/call", params)
            headers, body = exchange.next_request()
            async with http.stream("POST", url, json=body, headers=headers) as response:
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    refused.append(response.status_code)  # 429 beyond the limit
                    return
                async for line in response.aiter_lines():
                    if exchange.feed_line(line) is not None:
                        held.append(i)
                        await asyncio.sleep(3600)

        calls: list[asyncio.Task[None]] = []

        def settled() -> bool:
            """Every call opened so far is held at its question or was refused."""
            return len(held) + len(refused) == len(calls)

        async def attempt(count: int) -> None:
            for start in range(0, count, BATCH):
                batch = range(start, min(count, start + BATCH))
                calls.extend(asyncio.create_task(hold(hoarder, i)) for i in batch)
                await until_held(settled)

        async def release() -> None:
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
            calls.clear()
            held.clear()
            refused.clear()
            await until_held(lambda: waiting(base_url)["calls"] == 0)

        mine, other_held, estimate, grown, refusals, statuses = 0, False, 0, 0, 0, []
        try:
            # A few calls held and released first, so memory allocated once (buffers, code
            # paths run the first time) is not charged to the held calls.
            await attempt(min(attempts, BATCH))
            await release()
            before = rss_bytes(pid)
            await attempt(attempts)
            grown = rss_bytes(pid) - before
            estimate = waiting(base_url)["bytes"]
            mine, refusals, statuses = len(held), len(refused), sorted(set(refused))
            calls.append(asyncio.create_task(hold(other, attempts)))
            await until_held(settled)
            other_held = attempts in held
        finally:
            await release()
    return {
        "attempts": attempts,
        "held": mine,
        "refused": refusals,
        "refused_statuses": statuses,
        "waiting_memory_bytes": estimate,
        "rss_growth_bytes": grown,
        "other_principal_held": other_held,
    }

"""The memory a held legacy call adds to a replica, measured on a live replica process.

Under the 2025-11-25 protocol a tool that asks the user keeps its call alive on an SSE
stream until the answer comes. Here N `get_weather` calls are opened against one replica
and left waiting at their question; the growth of the replica's resident memory (VmRSS),
divided by N, is what one held call costs, with its HTTP connection and socket buffers.
The replica's own object-graph estimate (`/healthz` `waiting_memory_bytes`, see
`server/legacy/footprint.py`) is read at the same moment. A few calls are held and released first,
so that memory the process allocates once (buffers, caches, code paths run the first time)
is not charged to the measured calls.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from server.client import AsyncLegacyClient, Handlers, accept

#: Calls held and released before the measurement, to warm the replica up.
WARMUP_CALLS = 20
#: Calls opened at once. Opened all together, hundreds of calls would each need a Redis
#: connection at the same moment (the sse-store replica's pool holds 100), which measures
#: a burst, not what waiting costs.
BATCH = 20


def rss_bytes(pid: int) -> int:
    """Resident memory of a process, from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def waiting(base_url: str) -> dict[str, int]:
    """The replica's count of waiting calls and its estimate of their memory."""
    health = httpx.get(f"{base_url}/healthz", timeout=5).json()
    return {"calls": health["waiting_calls"], "bytes": health["waiting_memory_bytes"]}


@dataclass(frozen=True)
class HeldTool:
    """The call held: a tool of the server at `url` that asks before it answers, its
    arguments (None: the lab's `get_weather` of a city of its own per call), and the
    bearer tokens it is called with, in turn (none: anonymously), so that a server that
    caps the calls one principal holds can be given more than the cap."""

    url: str | None = None
    name: str = "get_weather"
    arguments: dict[str, Any] | None = None
    tokens: tuple[str | None, ...] = (None,)

    def params(self, i: int) -> dict[str, Any]:
        arguments = self.arguments if self.arguments is not None else {"location": f"c{i}"}
        return {"name": self.name, "arguments": arguments}


def measure_held_calls(
    base_url: str,
    pid: int | None,
    calls: int = 200,
    *,
    counted: bool = True,
    tool: HeldTool | None = None,
    rss: Callable[[], int] | None = None,
) -> dict[str, float]:
    """Hold `calls` calls of `tool` (the lab's get_weather) on one replica; its memory per
    held call, two ways, and the replica's memory before (warmed up, holding none).

    `counted=False` is for a server other than the lab's (no `/healthz` counts): a call
    counts as held once its question arrived, and only resident memory is measured, by
    `rss` (the process `pid`'s by default).
    """
    tool = tool or HeldTool()
    if rss is None:
        if pid is None:
            raise ValueError("a held call's memory needs the process (pid) or a reader of it")
        rss = functools.partial(rss_bytes, pid)
    return asyncio.run(_hold_and_measure(base_url, tool, rss, calls, counted))


async def _hold_and_measure(
    base_url: str, tool: HeldTool, rss: Callable[[], int], calls: int, counted: bool
) -> dict:
    url = tool.url or f"{base_url}/mcp"
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        clients = [
            AsyncLegacyClient(
                url,
                http=http,
                handlers=Handlers(elicit=lambda p: accept(name="octocat")),
                token=token,
            )
            for token in tool.tokens or (None,)
        ]
        for client in clients:
            await client.initialize()
        asked: list[int] = []

        async def hold(i: int) -> None:
            """Open a call and keep its stream open, unanswered, until cancelled."""
            exchange = clients[i % len(clients)].exchange("tools/call", tool.params(i))
            headers, body = exchange.next_request()
            async with http.stream("POST", url, json=body, headers=headers) as response:
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    await response.aread()
                    raise RuntimeError(
                        f"a call was not held: HTTP {response.status_code} {response.text[:200]}"
                    )
                async for line in response.aiter_lines():
                    if exchange.feed_line(line) is not None:
                        asked.append(i)
                        await asyncio.sleep(3600)

        async def release(tasks: list[asyncio.Task]) -> None:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            tasks.clear()
            if counted:
                await until_held(lambda: waiting(base_url)["calls"] == 0)

        async def open_calls(tasks: list[asyncio.Task], count: int) -> None:
            """Open `count` calls into `tasks`, a batch at a time, until each is asked."""
            asked.clear()
            while len(tasks) < count:
                batch = range(len(tasks), min(count, len(tasks) + BATCH))
                tasks.extend(asyncio.create_task(hold(i)) for i in batch)
                await until_held(lambda: len(asked) == len(tasks), tasks)

        held: list[asyncio.Task] = []
        try:
            await open_calls(held, WARMUP_CALLS)
            await release(held)
            before = rss()
            await open_calls(held, calls)
            if counted:
                await until_held(lambda: waiting(base_url)["calls"] == calls, held)
            grown = rss() - before
            estimate = waiting(base_url)["bytes"] if counted else float("nan")
        finally:
            await release(held)
    return {
        "calls": calls,
        "base_rss_bytes": before,
        "rss_bytes_per_call": grown / calls,
        "object_graph_bytes_per_call": estimate / calls,
    }


async def until_held(
    condition: Callable[[], bool], calls: Sequence[asyncio.Task] = (), timeout_s: float = 30.0
) -> None:
    """Wait for `condition`; a held call that ended (an error) ends the wait at once."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        for call in calls:
            if call.done():
                call.result()  # raises the call's error
                raise RuntimeError("a held call ended before it was released")
        if time.monotonic() > deadline:
            raise TimeoutError("the replica did not reach the expected state in time")
        await asyncio.sleep(0.05)

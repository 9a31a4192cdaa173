"""How a replica's CPU pool hands work to its workers: cheapest first, one job a worker,
no thread of the replica in between, and a worker that dies is replaced."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from server.core.cpu_pool import CpuPool, _ready

pytestmark = pytest.mark.integration


def _pool(workers: int = 1) -> CpuPool:
    return CpuPool(workers=workers, inline_max_ms=0.0, max_calls_per_principal=0)


def test_small_work_goes_before_large_work_that_came_first() -> None:
    pool = _pool()
    done: list[str] = []

    async def job(name: str, seconds: float, cost_ms: float) -> None:
        await pool.run(time.sleep, seconds, cost_ms=cost_ms)
        done.append(name)

    async def scenario() -> None:
        await pool.run(_ready, cost_ms=0.0)  # the worker started
        holder = asyncio.create_task(job("holder", 0.3, 300.0))
        await asyncio.sleep(0.05)  # the one worker is busy
        large = asyncio.create_task(job("large", 0.01, 25.0))
        await asyncio.sleep(0.01)
        small = asyncio.create_task(job("small", 0.01, 2.0))
        await asyncio.gather(holder, large, small)

    try:
        asyncio.run(scenario())
    finally:
        pool.close()
    assert done == ["holder", "small", "large"]


def test_hand_offs_start_no_thread_in_the_replica() -> None:
    pool = _pool(workers=2)
    before = set(threading.enumerate())  # other tests' threads in this process

    def started_since() -> list[str]:
        """Threads started since, but the loop's default executor's (which starts the
        workers)."""
        return [
            t.name for t in threading.enumerate() if t not in before and "asyncio" not in t.name
        ]

    async def scenario() -> list[str]:
        jobs = [pool.run(time.sleep, 0.01, cost_ms=10.0) for _ in range(20)]
        running = asyncio.gather(*jobs)
        await asyncio.sleep(0.05)
        seen = started_since()
        await running
        return seen + started_since()

    try:
        seen = asyncio.run(scenario())
    finally:
        pool.close()
    # The standard library's process pool would run a manager and a queue feeder here.
    assert seen == []


def test_a_caller_that_leaves_keeps_its_worker_busy_until_the_job_ends() -> None:
    pool = _pool()

    async def scenario() -> float:
        await pool.run(_ready, cost_ms=0.0)
        started = time.monotonic()
        leaving = asyncio.create_task(pool.run(time.sleep, 0.4, cost_ms=400.0))
        await asyncio.sleep(0.05)
        leaving.cancel()
        await pool.run(_ready, cost_ms=0.0)  # waits for the worker, not on top of it
        return time.monotonic() - started

    try:
        waited_s = asyncio.run(scenario())
    finally:
        pool.close()
    assert waited_s >= 0.35


def test_a_worker_killed_on_its_job_fails_that_job_and_another_takes_its_place() -> None:
    pool = _pool()

    async def scenario() -> tuple[int, int]:
        pid = await pool.run(_ready, cost_ms=0.0)
        job = asyncio.create_task(pool.run(time.sleep, 5.0, cost_ms=5000.0))
        await asyncio.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(BrokenProcessPool):
            await asyncio.wait_for(job, 5.0)
        return pid, await asyncio.wait_for(pool.run(_ready, cost_ms=0.0), 30.0)

    try:
        killed, replacement = asyncio.run(scenario())
    finally:
        pool.close()
    assert replacement != killed


def test_a_jobs_own_error_reaches_its_caller_and_the_worker_serves_on() -> None:
    pool = _pool()

    async def scenario() -> tuple[int, int]:
        pid = await pool.run(_ready, cost_ms=0.0)
        with pytest.raises(ValueError, match="invalid literal"):
            await pool.run(int, "not a number", cost_ms=0.0)
        return pid, await pool.run(_ready, cost_ms=0.0)

    try:
        first, second = asyncio.run(scenario())
    finally:
        pool.close()
    assert first == second

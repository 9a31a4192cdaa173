"""A replica's CPU workers leave Ctrl-C to their replica: a SIGINT to the process group
(a terminal's Ctrl-C, a notebook kernel's interrupt) neither kills a worker nor makes it
print a traceback; the replica's own end stops them."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from server.core.cpu_pool import CpuPool, _ready

pytestmark = pytest.mark.integration


def test_a_worker_ignores_sigint_and_keeps_serving() -> None:
    pool = CpuPool(workers=1, inline_max_ms=0.0, max_calls_per_principal=0)

    async def worker_pid() -> int:
        return await pool.run(_ready, cost_ms=0.0)

    try:
        pid = asyncio.run(worker_pid())
        os.kill(pid, signal.SIGINT)
        time.sleep(0.5)
        assert asyncio.run(worker_pid()) == pid  # the same worker, still serving
    finally:
        pool.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"worker {pid} outlived its pool's close")

"""Totals as well as per caller: many principals cannot together fill what each alone may not.

`tasks/result` waits, held legacy calls and CPU-heavy calls are each capped per principal
and per replica. Here every principal stays within its own cap, together they reach the
replica's, the next principal is refused (or, for a wait, answered at once), the refusal
is counted in `mcp_replica_totals_reached_total`, and `/healthz` still answers at once.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from server.client import McpError, MrtrClient
from server.core.cpu_pool import CpuPool
from server.harness.process import ServerProcess
from server.protocol.jsonrpc import TOO_MANY_REQUESTS, RpcError
from server.transport.auth import mint_token
from tests.server.conftest import JWT_SECRET, LEGACY_INITIALIZE
from tests.server.probes import health, metric, wait_for
from tests.server.tasks_fixtures import Wire, start_replica, token
from tests.server.test_abandoned_waits import working_task
from tests.server.test_cpu_work import ANSWER
from tests.server.test_limits import ENV, weather

#: The replica's total in each test: three principals reach it with one call each.
TOTAL = 3
REACHED = 'mcp_replica_totals_reached_total{limit="%s"}'


def healthz_s(replica: ServerProcess) -> float:
    """Seconds /healthz takes to answer 200."""
    started = time.monotonic()
    assert httpx.get(f"{replica.base_url}/healthz", timeout=5).status_code == 200
    return time.monotonic() - started


def test_cpu_calls_of_many_principals_reach_the_replicas_total() -> None:
    reached: list[int] = []
    pool = CpuPool(
        workers=1,
        inline_max_ms=0.25,
        max_calls_per_principal=2,
        max_calls=TOTAL,
        on_full=lambda: reached.append(1),
    )
    with contextlib.ExitStack() as running:
        for principal in ("a", "b", "c"):  # one each: every one within its cap of 2
            running.enter_context(pool.share(principal))
        with pytest.raises(RpcError) as refused, pool.share("d"):
            pass
        assert refused.value.code == TOO_MANY_REQUESTS
        assert refused.value.http_status == 429
        assert f"({TOTAL}, all callers together)" in refused.value.message
        assert reached == [1]
    # Once they end, the replica runs calls again.
    with pool.share("d"):
        assert pool.total == 1
    assert pool.total == 0 and pool.running == {}


@pytest.mark.integration
def test_cpu_calls_through_a_replica_stop_at_its_total_and_healthz_answers() -> None:
    replica = start_replica("--max-cpu-calls-per-replica", str(TOTAL), "--rate-per-principal", "0")
    try:

        def quote(principal: str) -> str:
            with MrtrClient(replica.url, token=token(principal), handlers=ANSWER) as client:
                return client.call_tool("quote", {"cpu_ms": 1000}).text

        with ThreadPoolExecutor(TOTAL) as pool:
            running = [pool.submit(quote, f"p{i}") for i in range(TOTAL)]
            wait_for(lambda: health(replica.base_url)["in_flight"] >= TOTAL)
            with pytest.raises(McpError) as refused:
                quote("late")  # no call of its own running: within its cap of 2
            assert healthz_s(replica) < 0.5
            done = [future.result() for future in running]
        assert refused.value.code == TOO_MANY_REQUESTS
        assert "all callers together" in refused.value.message
        assert all("octocat" in text for text in done)
        assert metric(replica.base_url, REACHED % "cpu_calls") == 1
    finally:
        replica.stop()


@pytest.mark.integration
def test_waits_of_many_principals_stop_at_the_replicas_total_and_healthz_answers() -> None:
    replica = start_replica(
        "--max-task-result-waits-per-replica",
        str(TOTAL),
        "--max-task-result-waits-per-principal",
        "4",
        "--task-result-wait-s",
        "3",
    )
    try:
        wires = {f"p{i}": Wire([replica.url], token=token(f"p{i}")) for i in range(TOTAL + 1)}
        tasks = {name: working_task(wire) for name, wire in wires.items()}

        def result_of(name: str) -> tuple[float, dict[str, Any]]:
            started = time.monotonic()
            _, message = wires[name].response("tasks/result", {"taskId": tasks[name]})
            return time.monotonic() - started, message

        names = list(wires)
        with ThreadPoolExecutor(TOTAL) as pool:
            waiting = [pool.submit(result_of, name) for name in names[:TOTAL]]
            wait_for(lambda: health(replica.base_url)["in_flight"] >= TOTAL)
            late_s, late = result_of(names[TOTAL])  # within its own cap of 4: waits 0
            assert healthz_s(replica) < 0.5
            waited = [future.result() for future in waiting]
        assert late_s < 1 and "still working" in late["error"]["message"]
        assert all(2.5 < seconds < 10 for seconds, _ in waited)
        assert metric(replica.base_url, REACHED % "task_result_waits") == 1
    finally:
        replica.stop()


@pytest.fixture
def legacy_replica() -> Iterator[ServerProcess]:
    replica = ServerProcess(args=["--max-held-calls-per-replica", str(TOTAL)], env=ENV).start()
    yield replica
    replica.stop()


@pytest.mark.integration
def test_held_calls_of_many_principals_stop_at_the_replicas_total(
    legacy_replica: ServerProcess,
) -> None:
    url = legacy_replica.url
    with httpx.Client(timeout=15) as http, contextlib.ExitStack() as held:

        def session(principal: str) -> dict[str, str]:
            auth = {"Authorization": f"Bearer {mint_token(principal, JWT_SECRET, ttl_s=60)}"}
            opened = http.post(url, json=LEGACY_INITIALIZE, headers=auth)
            return {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"]}

        for i in range(TOTAL):  # one call each, far under the per-principal 32
            stream = held.enter_context(
                http.stream("POST", url, json=weather(2), headers=session(f"p{i}"))
            )
            assert stream.headers["content-type"].startswith("text/event-stream")
        over = http.post(url, json=weather(2), headers=session("late"))
        assert over.status_code == 429
        assert over.json()["error"]["code"] == TOO_MANY_REQUESTS
        assert f"({TOTAL}, all callers together)" in over.json()["error"]["message"]
        assert healthz_s(legacy_replica) < 0.5
        assert metric(legacy_replica.base_url, REACHED % "held_calls") == 1

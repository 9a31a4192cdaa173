"""A replica dies while running a task: another takes the task over from its checkpoint.

The run holds a lease on the task, renewed while it runs. When its replica is killed the
lease lapses, and the next replica to read the task claims it and runs the handler again
from the last checkpoint saved in the store (`provision_vm` skips the steps already done).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from server.core.context import Replica
from server.core.store import StoreUnavailable
from server.harness.process import ServerProcess
from server.tasks.store import (
    COMPLETED,
    WORKING,
    InProcessTaskStore,
    TaskRecord,
    now_ms,
)
from server.tasks.worker import TaskWorker
from server.tools.demo import demo_catalog
from tests.server.probes import metric
from tests.server.tasks_fixtures import Wire, redis_url, running_replicas

__all__ = ["redis_url"]  # a fixture, used below

LEASE_S = 0.5


@pytest.fixture
def sharing_redis(redis_url: str) -> Iterator[list[ServerProcess]]:
    with running_replicas(2, "--task-store", redis_url, "--task-lease-s", str(LEASE_S)) as pair:
        yield pair


@pytest.mark.integration
def test_a_task_whose_replica_dies_is_finished_by_another(
    sharing_redis: list[ServerProcess],
) -> None:
    a, b = sharing_redis
    on_a, on_b = Wire([a.url]), Wire([b.url])
    call = {
        "name": "provision_vm",
        "arguments": {"name": "survivor", "seconds": 2.0},
        "task": {"ttl": 60000},
    }
    first = on_a("tools/call", call)
    confirmed = {"confirm_provision": {"action": "accept", "content": {"confirm": True}}}
    retry = {**call, "inputResponses": confirmed}
    if "requestState" in first:
        retry["requestState"] = first["requestState"]
    task_id = on_a("tools/call", retry)["task"]["taskId"]

    # A runs the task; once it is into its second step, A dies.
    deadline = time.monotonic() + 10
    while "(2/4)" not in on_a("tasks/get", {"taskId": task_id})["statusMessage"]:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    a.kill()

    # B reads the task: once A's lease has lapsed, B claims it and runs the rest.
    seen_on_b = []
    while (status := on_b("tasks/get", {"taskId": task_id}))["status"] == "working":
        seen_on_b.append(status["statusMessage"])
        assert time.monotonic() < deadline + 10
        time.sleep(0.02)
    assert status["status"] == "completed", status
    assert f"Resumed on {b.replica_id}: {a.replica_id} stopped." in seen_on_b
    assert not any("(1/4)" in m for m in seen_on_b)  # the first step was not done again
    final = on_b("tasks/result", {"taskId": task_id})
    assert final["structuredContent"]["replicas"] == [a.replica_id, b.replica_id]
    assert metric(b.base_url, "mcp_task_takeovers_total") == 1


class OutageStore(InProcessTaskStore):
    """A task store in memory whose next `refusals` writes fail, as writes do on a
    connection a Redis restart has cut."""

    refusals = 0

    async def _compare_and_set(self, record: TaskRecord) -> bool:
        if self.refusals:
            self.refusals -= 1
            raise StoreUnavailable("task", "update")
        return await super()._compare_and_set(record)


def test_a_checkpoint_the_store_refuses_stops_the_run_and_another_replica_finishes_it() -> None:
    async def main() -> TaskRecord:
        store = OutageStore(max_bytes=1 << 24)
        catalog = demo_catalog()
        a, b = (
            TaskWorker(
                store,
                catalog,
                Replica(name, 1, lambda: 0, 0, 0),
                lease_s=LEASE_S,
                max_result_bytes=1 << 20,
            )
            for name in ("a", "b")
        )
        created = now_ms()
        task = TaskRecord(
            task_id="provision_vm_1",
            principal="alice",
            tool="provision_vm",
            arguments={"name": "outage", "seconds": 0.2},
            client_capabilities={"elicitation": {"form": {}}, "tasks": {}},
            status=WORKING,
            created_at_ms=created,
            updated_at_ms=created,
            ttl_ms=60_000,
            poll_interval_ms=20,
            answers={"confirm_provision": {"action": "accept", "content": {"confirm": True}}},
        )
        a.lease(task)
        await store.create(task)
        store.refusals = 1  # the run's first checkpoint is refused; later writes succeed
        a.start(task)
        deadline = time.monotonic() + 10
        while a.running:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        stopped = await store.get(task.task_id)
        assert stopped is not None and stopped.status == WORKING  # not failed by the outage
        while (now := await store.get(task.task_id)) is not None and now.status == WORKING:
            assert time.monotonic() < deadline
            await b.take_over_if_abandoned(now)  # a poll reaching replica b
            await asyncio.sleep(0.05)
        await asyncio.gather(a.close(), b.close())
        assert now is not None
        return now

    finished = asyncio.run(main())
    assert finished.status == COMPLETED, finished.error
    assert finished.result["structuredContent"]["replicas"] == ["b"]

"""A replica dies while running a task: another takes the task over from its checkpoint.

The run holds a lease on the task, renewed while it runs. When its replica is killed the
lease lapses, and the next replica to read the task claims it and runs the handler again
from the last checkpoint saved in the store (`provision_vm` skips the steps already done).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from server.harness.process import ServerProcess
from tests.server.tasks_fixtures import Wire, redis_url, running_replicas

__all__ = ["redis_url"]  # a fixture, used below

LEASE_S = 0.5


@pytest.fixture
def sharing_redis(redis_url: str) -> Iterator[list[ServerProcess]]:
    with running_replicas(2, "--task-store", redis_url, "--task-lease-s", str(LEASE_S)) as pair:
        yield pair


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

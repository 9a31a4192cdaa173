"""The seed's persistent-tool example, message by message: the echo tool as a task.

The seed's twelve steps are six requests and their responses: `tools/call` with a task,
`tasks/get` (input_required), `tasks/result` (the inputRequests), `tasks/input_response`
(acknowledged), `tasks/get` (completed), `tasks/result` (the echo). They pass on one
replica, and on two replicas behind round-robin routing when the task store is Redis.
With each replica keeping tasks in its own memory, the second replica has never heard of
the task: the client gets "task not found" at once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from server.harness.process import ServerProcess
from tests.server.tasks_fixtures import RpcFailed, Wire, redis_url, running_replicas

pytestmark = pytest.mark.integration

__all__ = ["redis_url"]  # a fixture, used below


@pytest.fixture(scope="module")
def replica() -> Iterator[ServerProcess]:
    with running_replicas(1) as (one,):
        yield one


@pytest.fixture(scope="module")
def sharing_redis(redis_url: str) -> Iterator[list[ServerProcess]]:
    """Two replicas whose task store is one Redis."""
    with running_replicas(2, "--task-store", redis_url) as pair:
        yield pair


@pytest.fixture(scope="module")
def each_in_memory() -> Iterator[list[ServerProcess]]:
    """Two replicas, each keeping tasks in its own memory."""
    with running_replicas(2) as pair:
        yield pair


RELATED = "io.modelcontextprotocol/related-task"
ISO_8601 = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\Z")
ECHO_REQUEST = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Please provide the input string to echo back",
        "requestedSchema": {
            "type": "object",
            "properties": {"input": {"type": "string"}},
            "required": ["input"],
        },
    },
}


def run_the_seeds_echo_flow(wire: Wire) -> str:
    """Steps 1 to 12 of the seed's example; returns the task id."""
    # 1-2: tools/call with task metadata -> a task, working.
    created = wire("tools/call", {"name": "echo", "task": {"ttl": 60000}})
    task = created["task"]
    task_id = task["taskId"]
    assert task_id.startswith("echo_")
    assert task["status"] == "working"
    assert task["statusMessage"] == "Task created for the echo tool call."
    assert ISO_8601.match(task["createdAt"]) and ISO_8601.match(task["lastUpdatedAt"])
    assert task["ttl"] == 60000 and isinstance(task["pollInterval"], int)
    assert "result" not in created and "inputRequests" not in created

    # 3-4: tasks/get until the task waits for input.
    status = wire.poll(task_id, {"input_required"})
    assert status["taskId"] == task_id
    assert "tasks/result" in status["statusMessage"]
    assert status["ttl"] == 60000 and status["createdAt"] == task["createdAt"]

    # 5-6: tasks/result -> the InputRequiredResult, tied to the task.
    asked = wire("tasks/result", {"taskId": task_id})
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"] == {"echo_input": ECHO_REQUEST}
    assert asked["_meta"][RELATED] == {"taskId": task_id}
    assert "requestState" not in asked  # the state lives in the task store

    # 7-8: tasks/input_response -> an acknowledgement naming the task.
    answer = {"echo_input": {"action": "accept", "content": {"input": "Hello World!"}}}
    ack = wire(
        "tasks/input_response",
        {"inputResponses": answer, "_meta": {RELATED: {"taskId": task_id}}},
    )
    assert ack["_meta"] == {RELATED: {"taskId": task_id}}

    # 9-10: tasks/get until completed.
    done = wire.poll(task_id, {"completed", "failed", "cancelled"})
    assert done["status"] == "completed"
    assert "tasks/result" in done["statusMessage"]

    # 11-12: tasks/result -> the final result.
    final = wire("tasks/result", {"taskId": task_id})
    assert final["resultType"] == "complete"
    assert final["isError"] is False
    assert final["content"] == [{"type": "text", "text": "Echo: Hello World!"}]
    assert final["_meta"][RELATED] == {"taskId": task_id}
    return task_id


def test_the_seeds_echo_flow_on_one_replica(replica: ServerProcess) -> None:
    wire = Wire([replica.url])
    run_the_seeds_echo_flow(wire)
    methods = [method for method, _ in wire.sent]
    assert methods[0] == "tools/call" and methods[-1] == "tasks/result"
    assert methods.count("tasks/input_response") == 1


def test_the_seeds_echo_flow_on_two_replicas_sharing_redis(
    sharing_redis: list[ServerProcess],
) -> None:
    a, b = sharing_redis
    wire = Wire([a.url, b.url])
    run_the_seeds_echo_flow(wire)
    for method in ("tasks/get", "tasks/result"):  # each replica served some of each
        assert {url for m, url in wire.sent if m == method} == {a.url, b.url}


def test_a_task_created_on_one_replica_is_answered_and_finished_on_another(
    sharing_redis: list[ServerProcess],
) -> None:
    a, b = sharing_redis
    on_a, on_b = Wire([a.url]), Wire([b.url])
    task_id = on_a("tools/call", {"name": "echo", "task": {"ttl": 60000}})["task"]["taskId"]
    assert on_b.poll(task_id, {"input_required"})["status"] == "input_required"
    assert "echo_input" in on_b("tasks/result", {"taskId": task_id})["inputRequests"]
    answer = {"echo_input": {"action": "accept", "content": {"input": "from B"}}}
    on_b(
        "tasks/input_response", {"inputResponses": answer, "_meta": {RELATED: {"taskId": task_id}}}
    )
    # B ran the rest of the tool; A reports the outcome from the shared store.
    assert on_a.poll(task_id, {"completed", "failed", "cancelled"})["status"] == "completed"
    assert on_a("tasks/result", {"taskId": task_id})["content"][0]["text"] == "Echo: from B"


def test_two_replicas_each_with_its_own_memory_lose_the_task(
    each_in_memory: list[ServerProcess],
) -> None:
    a, b = each_in_memory
    wire = Wire([a.url, b.url])
    task_id = wire("tools/call", {"name": "echo", "task": {"ttl": 60000}})["task"]["taskId"]
    started = time.monotonic()
    with pytest.raises(RpcFailed) as lost:
        wire("tasks/get", {"taskId": task_id})  # lands on B, which never saw the task
    assert time.monotonic() - started < 2.0  # an answer, not a hang
    assert lost.value.code == -32602
    assert lost.value.message == f"Task not found: {task_id}"
    assert wire.sent[-1] == ("tasks/get", b.url)
    # The next request lands on A again, which still has it.
    assert wire("tasks/get", {"taskId": task_id})["taskId"] == task_id


def test_echo_without_a_task_runs_the_ephemeral_way(replica: ServerProcess) -> None:
    wire = Wire([replica.url])
    first: dict[str, Any] = wire("tools/call", {"name": "echo"})
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == {"echo_input": ECHO_REQUEST}
    answer = {"echo_input": {"action": "accept", "content": {"input": "again"}}}
    done = wire("tools/call", {"name": "echo", "inputResponses": answer})
    assert done["resultType"] == "complete"
    assert done["content"] == [{"type": "text", "text": "Echo: again"}]

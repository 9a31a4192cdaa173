"""Whose a task is, how long it lives, and what a wrong answer does to it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from server.harness.process import ServerProcess
from tests.server.tasks_fixtures import (
    EXTENSION_CAPABILITIES,
    FORM,
    RpcFailed,
    Wire,
    running_replicas,
    token,
)

pytestmark = pytest.mark.integration

RELATED = "io.modelcontextprotocol/related-task"


@pytest.fixture(scope="module")
def replica() -> Iterator[ServerProcess]:
    with running_replicas(1) as (one,):
        yield one


def start_echo(wire: Wire, ttl_ms: int = 60_000) -> str:
    """An echo task waiting for its input; returns its id."""
    task_id = wire("tools/call", {"name": "echo", "task": {"ttl": ttl_ms}})["task"]["taskId"]
    wire.poll(task_id, {"input_required"})
    return task_id


def answer(text: str) -> dict[str, dict]:
    return {"echo_input": {"action": "accept", "content": {"input": text}}}


def test_another_principal_cannot_read_answer_or_cancel_a_task(replica: ServerProcess) -> None:
    alice = Wire([replica.url], token=token("alice"))
    bob = Wire([replica.url], token=token("bob"))
    bob_on_the_extension = Wire(
        [replica.url], capabilities=EXTENSION_CAPABILITIES, token=token("bob")
    )
    task_id = start_echo(alice)
    related = {"_meta": {RELATED: {"taskId": task_id}}}
    attempts = [
        (bob, "tasks/get", {"taskId": task_id}),
        (bob, "tasks/result", {"taskId": task_id}),
        (bob, "tasks/input_response", {"inputResponses": answer("from bob"), **related}),
        (bob, "tasks/cancel", {"taskId": task_id}),
        (bob_on_the_extension, "tasks/get", {"taskId": task_id}),
        (bob_on_the_extension, "tasks/update", {"taskId": task_id, "inputResponses": {}}),
        (bob_on_the_extension, "tasks/cancel", {"taskId": task_id}),
    ]
    for wire, method, params in attempts:
        with pytest.raises(RpcFailed) as refused:
            wire(method, params)
        assert refused.value.code == -32602, method
        assert refused.value.message == f"Task not found: {task_id}", method  # not "forbidden"
    assert task_id not in [t["taskId"] for t in bob("tasks/list", {})["tasks"]]
    # Untouched for its owner, who finishes it.
    assert alice("tasks/get", {"taskId": task_id})["status"] == "input_required"
    alice("tasks/input_response", {"inputResponses": answer("from alice"), **related})
    alice.poll(task_id, {"completed"})
    assert alice("tasks/result", {"taskId": task_id})["content"][0]["text"] == "Echo: from alice"


def test_tasks_list_shows_the_callers_own_tasks(replica: ServerProcess) -> None:
    carol = Wire([replica.url], token=token("carol"))
    first, second = start_echo(carol), start_echo(carol)
    listed = carol("tasks/list", {})["tasks"]
    assert [t["taskId"] for t in listed] == [first, second]
    assert all(t["status"] == "input_required" for t in listed)


def test_an_expired_task_is_gone(replica: ServerProcess) -> None:
    dave = Wire([replica.url], token=token("dave"))
    task_id = start_echo(dave, ttl_ms=400)
    assert dave("tasks/get", {"taskId": task_id})["ttl"] == 400
    time.sleep(0.5)
    with pytest.raises(RpcFailed) as gone:
        dave("tasks/get", {"taskId": task_id})
    assert gone.value.message == f"Task not found: {task_id}"
    assert dave("tasks/list", {})["tasks"] == []


def test_a_wrongly_shaped_answer_leaves_the_task_waiting_and_it_asks_again(
    replica: ServerProcess,
) -> None:
    wire = Wire([replica.url])
    task_id = start_echo(wire)
    related = {"_meta": {RELATED: {"taskId": task_id}}}
    wrong = {"echo_input": {"action": "accept", "content": {"text": "no input field"}}}
    ack = wire("tasks/input_response", {"inputResponses": wrong, **related})
    assert ack["_meta"] == {RELATED: {"taskId": task_id}}  # received, but answers nothing
    assert wire("tasks/get", {"taskId": task_id})["status"] == "input_required"
    asked_again = wire("tasks/result", {"taskId": task_id})
    assert asked_again["resultType"] == "input_required"
    assert list(asked_again["inputRequests"]) == ["echo_input"]
    wire("tasks/input_response", {"inputResponses": answer("right"), **related})
    wire.poll(task_id, {"completed"})
    assert wire("tasks/result", {"taskId": task_id})["content"][0]["text"] == "Echo: right"


def test_answers_that_are_not_result_objects_are_invalid_params(replica: ServerProcess) -> None:
    wire = Wire([replica.url])
    task_id = start_echo(wire)
    with pytest.raises(RpcFailed) as refused:
        wire(
            "tasks/input_response",
            {"inputResponses": {"echo_input": 12345}, "_meta": {RELATED: {"taskId": task_id}}},
        )
    assert refused.value.code == -32602
    assert wire("tasks/get", {"taskId": task_id})["status"] == "input_required"


def test_a_cancelled_task_stays_cancelled(replica: ServerProcess) -> None:
    wire = Wire([replica.url])
    task_id = start_echo(wire)
    cancelled = wire("tasks/cancel", {"taskId": task_id})
    assert cancelled["status"] == "cancelled"
    assert wire("tasks/get", {"taskId": task_id})["status"] == "cancelled"
    with pytest.raises(RpcFailed) as again:
        wire("tasks/cancel", {"taskId": task_id})  # the seed's v1 methods: not twice
    assert again.value.code == -32602
    with pytest.raises(RpcFailed):
        wire("tasks/result", {"taskId": task_id})
    with pytest.raises(RpcFailed):
        wire(
            "tasks/input_response",
            {"inputResponses": answer("late"), "_meta": {RELATED: {"taskId": task_id}}},
        )


def test_task_methods_need_the_client_to_declare_tasks(replica: ServerProcess) -> None:
    undeclared = Wire([replica.url], capabilities=dict(FORM))
    task_id = start_echo(Wire([replica.url]))
    for method in ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update"):
        with pytest.raises(RpcFailed) as refused:
            undeclared(method, {"taskId": task_id})
        assert refused.value.code == -32021, method
        required = refused.value.data["requiredCapabilities"]["extensions"]
        assert "io.modelcontextprotocol/tasks" in required


def test_the_extension_has_no_tasks_result_or_tasks_list(replica: ServerProcess) -> None:
    extension = Wire([replica.url], capabilities=EXTENSION_CAPABILITIES)
    for method in ("tasks/result", "tasks/list", "tasks/input_response"):
        status, message = extension.response(method, {"taskId": "any"})
        assert message["error"]["code"] == -32601, method
        assert status == 404

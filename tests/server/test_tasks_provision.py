"""`provision_vm`: the seed's "ephemeral then persistent", end to end.

The tool first asks for confirmation the MRTR way and keeps nothing: until the user
agrees there is no task, no stored state. Only the confirmed retry creates a task, which
does the long part in the background and reports its progress in the task's status.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from server.harness.process import ServerProcess
from tests.server.tasks_fixtures import FORM, RpcFailed, Wire, running_replicas, token

pytestmark = pytest.mark.integration

CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}


@pytest.fixture(scope="module")
def replica() -> Iterator[ServerProcess]:
    with running_replicas(1) as (one,):
        yield one


def call(name: str, **extra: object) -> dict[str, object]:
    """The params of a provision_vm call that opts into a task (the seed's `params.task`)."""
    return {
        "name": "provision_vm",
        # Steps of 0.5 s, twice the poll interval (250 ms): a poller sees each one.
        "arguments": {"name": name, "seconds": 2.0},
        "task": {"ttl": 60000},
        **extra,
    }


def confirm(yes: bool) -> dict[str, object]:
    return {"confirm_provision": {"action": "accept", "content": {"confirm": yes}}}


def test_provision_vm_confirms_without_state_then_becomes_a_task(replica: ServerProcess) -> None:
    wire = Wire([replica.url], token=token("erin"))

    # Ephemeral: the first call ends with a question, and the server keeps nothing.
    first = wire("tools/call", call("web-1"))
    assert first["resultType"] == "input_required"
    request = first["inputRequests"]["confirm_provision"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["requestedSchema"] == CONFIRM_SCHEMA
    assert "task" not in first and "taskId" not in first
    assert wire("tasks/list", {})["tasks"] == []

    # The answer comes in a new, independent tools/call: now the server creates a task.
    retry = call("web-1", inputResponses=confirm(True))
    if "requestState" in first:
        retry["requestState"] = first["requestState"]
    created = wire("tools/call", retry)
    assert created["resultType"] == "task"
    task = created["task"]
    assert task["status"] == "working"
    assert task["statusMessage"] == "Provisioning web-1."
    assert "requestState" not in created and "inputRequests" not in created
    assert [t["taskId"] for t in wire("tasks/list", {})["tasks"]] == [task["taskId"]]

    # Persistent: the long part runs in the background, its progress in the status.
    messages = []
    while (status := wire("tasks/get", {"taskId": task["taskId"]}))["status"] == "working":
        messages.append(status["statusMessage"])
        time.sleep(status["pollInterval"] / 1000)
    assert status["status"] == "completed"
    steps = [m for m in dict.fromkeys(messages) if m.endswith("/4)")]
    assert len(steps) >= 2
    assert steps == sorted(steps, key=lambda m: m[-4])  # in order: (1/4), (2/4), ...
    final = wire("tasks/result", {"taskId": task["taskId"]})
    assert final["content"][0]["text"] == "Virtual machine web-1 is running."
    assert final["structuredContent"]["state"] == "running"


def test_declining_provision_vm_ends_without_a_task(replica: ServerProcess) -> None:
    wire = Wire([replica.url], token=token("frank"))
    first = wire("tools/call", call("web-2"))
    retry = call("web-2", inputResponses=confirm(False))
    if "requestState" in first:
        retry["requestState"] = first["requestState"]
    result = wire("tools/call", retry)
    assert result["resultType"] == "complete" and result["isError"] is True
    assert result["content"][0]["text"] == "web-2 was not provisioned: not confirmed."
    assert wire("tasks/list", {})["tasks"] == []


def test_provision_vm_refuses_a_client_that_cannot_run_tasks(replica: ServerProcess) -> None:
    plain = Wire([replica.url], capabilities=dict(FORM))
    with pytest.raises(RpcFailed) as refused:
        plain("tools/call", {"name": "provision_vm", "arguments": {"name": "web-3"}})
    assert refused.value.code == -32021  # before asking anything: the tool requires a task

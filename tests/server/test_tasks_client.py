"""The reference client's task flow: poll, answer, fetch, in both forms of the methods."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from server.client import (
    EXTENSION,
    SEED,
    AsyncMrtrClient,
    Handlers,
    McpError,
    MrtrClient,
    accept,
)
from server.harness.process import ServerProcess
from tests.server.tasks_fixtures import (
    POLL_INTERVAL_MS,
    RoundRobin,
    redis_url,
    running_replicas,
)

pytestmark = pytest.mark.integration

__all__ = ["redis_url"]  # a fixture, used below


@pytest.fixture(scope="module")
def replica() -> Iterator[ServerProcess]:
    """One replica with the demo tools and the conformance fixtures (failing tasks)."""
    with running_replicas(1, "--conformance") as (one,):
        yield one


@pytest.fixture(scope="module")
def sharing_redis(redis_url: str) -> Iterator[list[ServerProcess]]:
    with running_replicas(2, "--task-store", redis_url) as pair:
        yield pair


def user(**by_field: Any) -> Handlers:
    """A user who fills each form field it knows, by field name."""

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        fields = params["requestedSchema"]["properties"]
        return accept(**{name: by_field[name] for name in fields if name in by_field})

    return Handlers(elicit=elicit)


def methods(flow: Any) -> list[str]:
    return [exchange.method for exchange in flow.messages]


def test_the_client_runs_the_seeds_echo_flow(replica: ServerProcess) -> None:
    with MrtrClient(replica.url, handlers=user(input="Hello World!")) as client:
        flow = client.call_tool_as_task("echo", ttl_ms=60_000)
    assert flow.text == "Echo: Hello World!"
    assert flow.task["ttl"] == 60_000
    assert flow.poll_interval_s == POLL_INTERVAL_MS / 1000
    sent = methods(flow)
    asked = sent.index("tasks/input_response")
    # Polls until input is needed, fetches the questions, answers, polls, fetches the result.
    assert set(sent[: asked - 1]) == {"tasks/get"} and sent[asked - 1] == "tasks/result"
    assert set(sent[asked + 1 : -1]) == {"tasks/get"} and sent[-1] == "tasks/result"
    assert flow.creation is not None
    assert flow.creation.rounds[0].request["params"]["task"] == {"ttl": 60_000}


def test_the_async_client_runs_the_extension_flow(replica: ServerProcess) -> None:
    async def scenario() -> Any:
        async with AsyncMrtrClient(replica.url, handlers=user(input="v2")) as client:
            return await client.call_tool_as_task("echo", wire=EXTENSION)

    flow = asyncio.run(scenario())
    assert flow.text == "Echo: v2"
    sent = methods(flow)
    assert "tasks/result" not in sent and sent.count("tasks/update") == 1
    assert set(sent) == {"tasks/get", "tasks/update"}
    assert "ttlMs" in flow.task and "ttl" not in flow.task


def test_the_client_answers_again_when_an_answer_did_not_fit(replica: ServerProcess) -> None:
    answers = iter([accept(wrong="field"), accept(input="second try")])
    handlers = Handlers(elicit=lambda params: next(answers))
    with MrtrClient(replica.url, handlers=handlers) as client:
        flow = client.call_tool_as_task("echo")
    assert flow.text == "Echo: second try"
    assert methods(flow).count("tasks/input_response") == 2
    assert methods(flow).count("tasks/result") == 3  # asked twice, then the result


def test_a_tool_that_ends_before_becoming_a_task_gives_its_result_at_once(
    replica: ServerProcess,
) -> None:
    with MrtrClient(replica.url, handlers=user(confirm=False)) as client:
        flow = client.call_tool_as_task("provision_vm", {"name": "no", "seconds": 0})
    assert flow.task_id is None and flow.messages == []
    assert flow.result is not None and flow.result["isError"] is True


@pytest.mark.parametrize("wire", [SEED, EXTENSION])
def test_a_failed_task_raises_its_error(replica: ServerProcess, wire: str) -> None:
    with MrtrClient(replica.url) as client, pytest.raises(McpError) as failed:
        client.call_tool_as_task("protocol_error_job", wire=wire)
    assert failed.value.code == -32603
    assert "protocol error" in failed.value.message


@pytest.mark.parametrize("wire", [SEED, EXTENSION])
def test_the_client_follows_tasks_across_two_replicas_behind_round_robin(
    sharing_redis: list[ServerProcess], wire: str
) -> None:
    a, b = sharing_redis
    balancer = RoundRobin([a.url, b.url])
    handlers = user(input="round robin", confirm=True)
    with MrtrClient(a.url, transport=balancer, handlers=handlers) as client:
        echo = client.call_tool_as_task("echo", wire=wire)
        vm = client.call_tool_as_task("provision_vm", {"name": "db-1", "seconds": 0.2}, wire=wire)
    assert echo.text == "Echo: round robin"
    assert vm.text == "Virtual machine db-1 is running."
    assert vm.creation is not None and len(vm.creation.rounds) == 2  # ask, then the task
    assert set(balancer.ports) == {a.port, b.port}

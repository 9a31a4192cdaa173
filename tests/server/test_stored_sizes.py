"""What the task store keeps is bounded, and a store with no room says it is full.

A task keeps its result until it expires (up to a day): a tool whose result is over the
limit fails, saying so. A store at its size cap (in process) or at its `maxmemory` (Redis
under `noeviction`) refuses the write with HTTP 507 "task store full", to whichever
principal's write found it full, rather than 503 "unavailable", which names another cause.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_py

from server.app import create_app
from server.client import McpError, MrtrClient, accept
from server.config import ServerConfig
from server.core.catalog import Catalog
from server.core.context import Context
from server.protocol.content import tool_result
from tests.server.conftest import make_config, user_answers
from tests.server.tasks_fixtures import RpcFailed, Wire, redis_server, running_replicas, token

RESULT_LIMIT = ServerConfig.__dataclass_fields__["max_task_result_bytes"].default
ECHO_TASK = {"name": "echo", "arguments": {}, "task": {"ttl": 60_000}}


def test_a_task_whose_result_is_over_the_default_limit_fails_saying_so() -> None:
    catalog = Catalog()

    @catalog.tool("report", "A report too long to keep.", execution={"taskSupport": "required"})
    async def report(ctx: Context) -> dict[str, Any]:
        await ctx.become_task()
        return tool_result("z" * RESULT_LIMIT)

    app = create_app(make_config(), catalog)
    with (
        MrtrClient.for_app(app, handlers=user_answers()) as client,
        pytest.raises(McpError) as failed,
    ):
        client.call_tool_as_task("report", wire="extension")
    assert failed.value.message.startswith("the task's result is ")
    assert failed.value.message.endswith(f"this server keeps at most {RESULT_LIMIT}")


def fill(alice: Wire) -> RpcFailed:
    """Create tasks with large arguments until the store refuses one."""
    for _ in range(400):
        try:
            alice("tools/call", {**ECHO_TASK, "arguments": {"blob": "x" * 60_000}})
        except RpcFailed as refused:
            return refused
    raise AssertionError("the store never filled")


def assert_full(refused: RpcFailed, operation: str) -> None:
    assert refused.http_status == 507
    assert refused.message == f"Task store error: task store full during {operation}"


def bob_answers_into_a_full_store(urls: list[str]) -> None:
    """bob's task waits for an answer; alice fills the store; bob's answer finds it full."""
    bob = Wire(urls, token=token("bob"))
    task_id = bob("tools/call", ECHO_TASK)["task"]["taskId"]
    bob.poll(task_id, {"input_required"})
    assert_full(fill(Wire(urls, token=token("alice"))), "create")
    related = {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
    answer = {"echo_input": accept(input="y" * 50_000)}
    with pytest.raises(RpcFailed) as refused:
        bob("tasks/input_response", {"inputResponses": answer, "_meta": related})
    assert_full(refused.value, "update")


@pytest.mark.integration
def test_an_in_process_store_at_its_cap_says_it_is_full() -> None:
    with running_replicas(1, "--max-task-store-bytes", str(1_000_000)) as (replica,):
        bob_answers_into_a_full_store([replica.url])


@pytest.fixture
def small_redis() -> Iterator[str]:
    """A durable Redis whose maxmemory leaves about a megabyte for tasks."""
    with redis_server() as redis:
        admin = redis_py.Redis.from_url(redis.url)
        used = int(admin.info("memory")["used_memory"])
        admin.config_set("maxmemory", used + 1_500_000)
        yield redis.url


@pytest.mark.integration
def test_a_redis_at_its_maxmemory_says_it_is_full(small_redis: str) -> None:
    with running_replicas(1, "--task-store", small_redis) as (replica,):
        bob_answers_into_a_full_store([replica.url])

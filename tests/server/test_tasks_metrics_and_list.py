"""Tasks seen from outside: `/metrics` counting statuses, and `tasks/list` pages with a cursor.

(Takeovers and store errors in `/metrics` are checked where those happen: the takeover
and store-outage tests.)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import httpx
import pytest

from server.client import MrtrClient
from server.harness.process import ServerProcess
from server.tasks.redis_store import RedisTaskStore
from server.tasks.store import TaskRecord, now_ms
from tests.server.conftest import user_answers
from tests.server.probes import metric
from tests.server.tasks_fixtures import RpcFailed, Wire, redis_server, running_replicas, token

pytestmark = pytest.mark.integration

PAGE = 2


@pytest.fixture(scope="module")
def replica() -> Iterator[ServerProcess]:
    with running_replicas(1, "--task-list-page-size", str(PAGE)) as (one,):
        yield one


def test_metrics_count_each_status_a_task_moved_into(replica: ServerProcess) -> None:
    handlers = user_answers(echo={"input": "hello"})
    with MrtrClient(replica.url, handlers=handlers) as client:
        before = {
            status: metric(replica.base_url, f'mcp_tasks_total{{status="{status}"}}')
            for status in ("working", "input_required", "completed")
        }
        flow = client.call_tool_as_task("echo", wire="seed")
    assert flow.text == "Echo: hello"
    moved = {
        status: metric(replica.base_url, f'mcp_tasks_total{{status="{status}"}}') - count
        for status, count in before.items()
    }
    # Created working, parked for the answer, resumed working, completed.
    assert moved == {"working": 2, "input_required": 1, "completed": 1}
    assert metric(replica.base_url, "mcp_task_runs ") == 0


def test_tasks_list_comes_in_pages_linked_by_a_cursor(replica: ServerProcess) -> None:
    wire = Wire([replica.url], token=token("lister"))  # anonymous callers list nothing
    created = [
        wire("tools/call", {"name": "echo", "task": {"ttl": 60000}})["task"]["taskId"]
        for _ in range(5)
    ]
    listed: list[str] = []
    pages = []
    params: dict[str, str] = {}
    while True:
        page = wire("tasks/list", params)
        pages.append(len(page["tasks"]))
        listed += [t["taskId"] for t in page["tasks"]]
        if "nextCursor" not in page:
            break
        params = {"cursor": page["nextCursor"]}
    mine = [task_id for task_id in listed if task_id in created]
    assert mine == created  # oldest first, each once
    assert len(listed) == len(set(listed))
    assert all(size == PAGE for size in pages[:-1]) and 0 < pages[-1] <= PAGE


def test_a_cursor_that_is_not_one_is_invalid_params(replica: ServerProcess) -> None:
    wire = Wire([replica.url])
    for cursor in ("not a cursor", "W10=", 42):
        with pytest.raises(RpcFailed) as failed:
            wire("tasks/list", {"cursor": cursor})
        assert failed.value.code == -32602, cursor


def test_listing_a_principal_with_a_thousand_tasks_pages_through_them_beside_healthz() -> None:
    many = 1000

    async def fill(url: str) -> list[str]:
        store = RedisTaskStore(url, timeout_s=5.0)  # the replicas' own key prefix
        created = now_ms()
        ids = []
        try:
            for i in range(many):
                task = TaskRecord(
                    task_id=f"t-{i:05d}",
                    principal="hoarder",
                    tool="echo",
                    arguments={"padding": "x" * 2000},
                    client_capabilities={},
                    status="working",
                    created_at_ms=created + i // 10,
                    updated_at_ms=created,
                    ttl_ms=600_000,
                    poll_interval_ms=100,
                )
                await store.create(task)
                ids.append(task.task_id)
        finally:
            await store.close()
        return ids

    with redis_server() as redis, running_replicas(1, "--task-store", redis.url) as (one,):
        created = asyncio.run(fill(redis.url))
        wire = Wire([one.url], token=token("hoarder"))
        health: list[int] = []
        listing = threading.Event()

        def poll_health() -> None:
            with httpx.Client(timeout=10) as http:
                while not listing.is_set():
                    health.append(http.get(f"{one.base_url}/healthz").status_code)

        poller = threading.Thread(target=poll_health)
        poller.start()
        listed: list[str] = []
        pages = 0
        try:
            params: dict[str, str] = {}
            while True:
                page = wire("tasks/list", params)
                pages += 1
                assert len(page["tasks"]) <= 50  # the default page size
                listed += [t["taskId"] for t in page["tasks"]]
                if "nextCursor" not in page:
                    break
                params = {"cursor": page["nextCursor"]}
        finally:
            listing.set()
            poller.join()
    assert listed == created  # oldest first, each once
    assert pages == many // 50
    assert health and set(health) == {200}

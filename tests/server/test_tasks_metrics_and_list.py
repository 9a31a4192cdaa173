"""Tasks seen from outside: `/metrics` counting statuses, and `tasks/list` pages with a cursor.

(Takeovers and store errors in `/metrics` are checked where those happen: the takeover
and store-outage tests.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.client import MrtrClient
from server.harness.process import ServerProcess
from tests.server.conftest import user_answers
from tests.server.probes import metric
from tests.server.tasks_fixtures import RpcFailed, Wire, running_replicas, token

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

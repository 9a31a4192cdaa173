"""A task id nobody was issued is "not found" on every task store, whatever it looks like.

An id may name the store epoch it was created in (`.e` and eight hex digits), so that a
task lost with a Redis's data is reported as lost (503) rather than as never there. An id
made up to look so, naming an epoch the store was never seen in, is simply not found:
the caller learns nothing about the store, and no outage is reported that did not happen.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.protocol.jsonrpc import INVALID_PARAMS
from tests.server.tasks_fixtures import RpcFailed, Wire, redis_server, running_replicas

#: Task ids no store ever made (fixed, so every test worker collects the same tests).
MADE_UP = [
    # well formed, an epoch the store never had
    "echo_5f0c8a52-3d7e-4b1a-9c62-0e1d2f3a4b5c.e1234abcd",
    "echo_0b9e7d6c-5a4f-4e3d-8c2b-1a0f9e8d7c6b.e",
    "echo_7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d.eZZZZZZZZ",
    "x.e12345678",
    "echo_2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f",
]


@pytest.fixture(scope="module", params=["memory", "redis"])
def wire(request: pytest.FixtureRequest) -> Iterator[Wire]:
    if request.param == "memory":
        with running_replicas(1) as (replica,):
            yield Wire([replica.url])
        return
    with redis_server() as redis, running_replicas(1, "--task-store", redis.url) as (replica,):
        wire = Wire([replica.url])
        # The store has an epoch of its own (the first task starts it).
        wire("tools/call", {"name": "echo", "task": {"ttl": 60000}})
        yield wire


@pytest.mark.integration
@pytest.mark.parametrize("task_id", MADE_UP)
@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/cancel"])
def test_a_made_up_task_id_is_not_found(wire: Wire, method: str, task_id: str) -> None:
    with pytest.raises(RpcFailed) as refused:
        wire(method, {"taskId": task_id})
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.message.startswith("Task not found")
    assert refused.value.http_status != 503

"""A task id nobody was issued is "not found" on every task store, whatever it looks like.

An id may name the store epoch it was created in (`.e` and eight hex digits), so that a
task lost with a Redis's data is reported as lost (503) rather than as never there. An id
made up to look so, naming an epoch the store was never seen in, is simply not found:
the caller learns nothing about the store, and no outage is reported that did not happen.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from server.protocol.jsonrpc import INVALID_PARAMS
from tests.server.tasks_fixtures import RpcFailed, Wire, redis_server, running_replicas

MADE_UP = [
    f"echo_{uuid.uuid4()}.e1234abcd",  # well formed, an epoch the store never had
    f"echo_{uuid.uuid4()}.e",
    f"echo_{uuid.uuid4()}.eZZZZZZZZ",
    "x.e12345678",
    f"echo_{uuid.uuid4()}",
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

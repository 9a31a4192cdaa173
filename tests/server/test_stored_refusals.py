"""Every refusal at a cap on what a replica keeps is counted, by store and cap.

`mcp_stored_refusals_total{store, cap}` counts the caller refused at a cap on legacy
sessions, tasks (their count and sizes) and held calls, beside the JSON-RPC error the
caller gets; a caller under the cap is served and counts nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.client import Exchange
from server.transport.auth import mint_token
from tests.server.conftest import JWT_SECRET, LEGACY_INITIALIZE, make_config
from tests.server.tasks_fixtures import SEED_CAPABILITIES, token

LOCAL = "http://127.0.0.1"


def refusals(http: TestClient, store: str, cap: str) -> float:
    """What /metrics counts as refused at `store`'s `cap`."""
    start = f'mcp_stored_refusals_total{{cap="{cap}",store="{store}"}} '
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(start):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def task_call(http: TestClient, principal: str, arguments: dict[str, Any]) -> Any:
    params = {"name": "echo", "arguments": arguments, "task": {"ttl": 60_000}}
    exchange = Exchange("tools/call", params, SEED_CAPABILITIES, token=token(principal))
    headers, body = exchange.next_request()
    return http.post("/mcp", json=body, headers=headers)


@pytest.fixture
def http() -> Iterator[TestClient]:
    config = make_config(
        max_sessions_per_principal=1,
        max_client_info_bytes=200,
        max_tasks_per_principal=1,
        max_task_arguments_bytes=200,
    )
    with TestClient(create_app(config), base_url=LOCAL) as client:
        yield client


def test_legacy_sessions_over_their_caps_are_counted(http: TestClient) -> None:
    alice = {"Authorization": "Bearer " + mint_token("alice", JWT_SECRET)}
    assert http.post("/mcp", json=LEGACY_INITIALIZE, headers=alice).status_code == 200
    assert refusals(http, "legacy", "sessions_per_principal") == 0
    assert http.post("/mcp", json=LEGACY_INITIALIZE, headers=alice).status_code == 429
    assert refusals(http, "legacy", "sessions_per_principal") == 1
    big = {**LEGACY_INITIALIZE, "params": {**LEGACY_INITIALIZE["params"]}}
    big["params"]["clientInfo"] = {"name": "x" * 300, "version": "1"}
    bob = {"Authorization": "Bearer " + mint_token("bob", JWT_SECRET)}
    assert http.post("/mcp", json=big, headers=bob).status_code == 413
    assert refusals(http, "legacy", "client_info_bytes") == 1


def test_tasks_over_their_caps_are_counted(http: TestClient) -> None:
    first = task_call(http, "carol", {"text": "hello"}).json()
    assert first["result"]["resultType"] == "task"
    assert refusals(http, "tasks", "tasks_per_principal") == 0
    over = task_call(http, "carol", {"text": "again"})
    assert over.status_code == 429
    assert refusals(http, "tasks", "tasks_per_principal") == 1
    large = task_call(http, "dave", {"text": "x" * 300})
    assert large.status_code == 413
    assert refusals(http, "tasks", "arguments_bytes") == 1

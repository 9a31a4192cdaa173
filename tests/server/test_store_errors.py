"""A failing store is named, never located: no Redis host, port or script in any error.

Store errors are forced on every path of both shared stores, on a real replica and a real
Redis: first keys of the wrong type (Redis then fails inside the lab's scripts, whose
errors name the script's SHA), then Redis killed (connection errors name host and port).
Every response body, and `/healthz`, is searched for what would locate the store.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from server.harness.process import ServerProcess
from tests.server.tasks_fixtures import Wire, redis_server, running_replicas, token

pytestmark = pytest.mark.integration

LEGACY = "2025-11-25"
TASK = {"name": "echo", "task": {"ttl": 60000}}


def initialize(rid: int = 1) -> dict[str, Any]:
    params = {
        "protocolVersion": LEGACY,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "test", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


class Probe:
    """Sends requests to one replica as one principal and keeps every response body."""

    def __init__(self, replica: ServerProcess, principal: str) -> None:
        self.replica = replica
        self.auth = {"Authorization": f"Bearer {token(principal)}"}
        self.tasks = Wire([replica.url], token=token(principal))
        self.http = httpx.Client(timeout=15)
        self.bodies: list[str] = []
        self.statuses: list[int] = []

    def legacy(self, message: dict[str, Any], session: str | None = None) -> httpx.Response:
        headers = {**self.auth, "MCP-Protocol-Version": LEGACY}
        if session is not None:
            headers["Mcp-Session-Id"] = session
        return self.keep(self.http.post(self.replica.url, json=message, headers=headers))

    def delete(self, session: str) -> httpx.Response:
        headers = {**self.auth, "MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": session}
        return self.keep(self.http.request("DELETE", self.replica.url, headers=headers))

    def task(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        status, message = self.tasks.response(method, params)
        self.statuses.append(status)
        self.bodies.append(repr(message))
        return message

    def health(self) -> None:
        self.keep(self.http.get(f"{self.replica.base_url}/healthz"))

    def keep(self, response: httpx.Response) -> httpx.Response:
        self.statuses.append(response.status_code)
        self.bodies.append(response.text)
        return response

    def every_path(self, session: str, task_id: str) -> None:
        """One request down each store path: sessions, held calls, answers, tasks."""
        self.legacy(initialize())
        weather = {"name": "get_weather", "arguments": {"location": "Oslo"}}
        self.legacy({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": weather}, session)
        level = {"level": "info"}
        self.legacy(
            {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": level}, session
        )
        self.legacy({"jsonrpc": "2.0", "id": "x-1", "result": {"action": "cancel"}}, session)
        self.delete(session)
        self.task("tools/call", TASK)
        self.task("tasks/get", {"taskId": task_id})
        self.task("tasks/list", {})
        self.task("tasks/cancel", {"taskId": task_id})
        self.task("tasks/result", {"taskId": task_id})
        self.health()


def locating(text: str, port: int) -> list[str]:
    """What in `text` would tell a client where the store is or what runs in it."""
    patterns = [
        rf"\b{port}\b",
        r"127\.0\.0\.1",
        r"localhost",
        r"redis://",
        r"\b[0-9a-f]{40}\b",  # a script's SHA1
        r"f_[0-9a-f]{8}",  # Redis names a script's function f_<sha>
        r"(?i)wrongtype|script",
    ]
    return [p for p in patterns if re.search(p, text)]


@pytest.fixture
def cluster() -> Iterator[tuple[Any, ServerProcess]]:
    with redis_server() as store:
        args = ["--task-store", store.url, "--legacy-store", store.url]
        with running_replicas(1, *args, "--max-sessions-per-principal", "5") as (replica,):
            yield store, replica


def test_no_store_error_names_an_address_or_a_script(cluster: tuple[Any, ServerProcess]) -> None:
    store, replica = cluster
    alice = Probe(replica, "alice")
    opened = alice.legacy(initialize())
    session = opened.headers["mcp-session-id"]
    task_id = alice.task("tools/call", TASK)["result"]["task"]["taskId"]

    # Keys of the wrong type: every store command on them fails inside Redis.
    poisoned = Probe(replica, "mallory")
    direct = redis.Redis.from_url(store.url)
    try:
        direct.set("mrtr:legacy:sessions-of:mallory", "not a sorted set")
        direct.set("mrtr-lab:tasks-expiring:mallory", "not a sorted set")
        direct.set("mrtr-lab:tasks-created:mallory", "not a sorted set")
        direct.set("mrtr-lab:task:poisoned", "not a hash")
        direct.hset("mrtr:legacy:session:poisoned", "not", "a string")
    finally:
        direct.close()
    poisoned.every_path("poisoned", "poisoned")
    assert 503 in poisoned.statuses  # the store did fail

    store.kill()  # and then it is gone
    alice.every_path(session, task_id)
    assert alice.statuses.count(503) >= 5

    for text in poisoned.bodies + alice.bodies:
        assert not locating(text, store.port), text

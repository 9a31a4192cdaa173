"""Task tools in the load test: the persistent task store, crashes and store outages.

Real processes throughout: HAProxy, replicas sharing a Redis with an append-only file,
and a Locust swarm whose users run `echo` and `provision_vm` as tasks in both wire forms.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.harness.cluster import Cluster, task_tools
from loadtest.harness.haproxy import HAProxy
from loadtest.harness.redis_server import RedisServer
from loadtest.scenarios.run import run_scenario
from loadtest.scenarios.summary import task_totals
from loadtest.users.http_interface import HttpReply, httpx_post
from loadtest.users.simulated_user import ThinkTime
from loadtest.users.task_flow import WIRES, run_task_flow

needs_redis = pytest.mark.skipif(not RedisServer.available(), reason="redis is not installed")
needs_cluster = pytest.mark.skipif(
    not (HAProxy.available() and RedisServer.available()), reason="haproxy or redis missing"
)
TASK_MIX = {"echo": 1.0, "provision_vm": 1.0}


def quiet(line: str) -> None:
    pass


def swarm_with_tasks(scenario: str, **settings: Any) -> dict[str, Any]:
    """A short scenario on 2 replicas, 6 users calling only task tools; its summary."""
    config = LoadTestConfig(
        scenario=scenario,
        replicas=2,
        users=6,
        duration_s=12,
        fault_at_s=3,
        restart_delay_s=2.0,
        tool_mix=TASK_MIX,
        **settings,
    )
    return run_scenario(config, progress=quiet)


def fault_events(summary: dict[str, Any], *names: str) -> list[str]:
    return [f["event"] for f in summary["faults"] if f["event"] in names]


def test_the_task_tools_of_a_mix_are_those_the_catalog_runs_as_tasks() -> None:
    assert task_tools({"get_weather": 2, "echo": 1, "provision_vm": 1}) == ["echo", "provision_vm"]
    assert task_tools({"get_weather": 1, "crunch": 1}) == []


def test_a_store_outage_needs_a_store() -> None:
    with pytest.raises(LoadTestError, match="store-outage needs a store"):
        Cluster(LoadTestConfig(scenario="store-outage", tool_mix={"get_weather": 1}))
    with pytest.raises(LoadTestError):
        LoadTestConfig(task_wire="carrier-pigeon")


def test_task_totals_count_what_clients_saw() -> None:
    def call(outcome: str, task_id: str | None, **task: Any) -> dict[str, Any]:
        return {"outcome": outcome, "task": {"id": task_id, **task}}

    calls = [
        call("completed", "t1", taken_over=True),
        call("completed", "t2", store_errors=3),
        call("lost", "t3"),
        call("failed", "t4"),
        call("failed", None),  # refused: never became a task
        {"outcome": "completed", "task": {}},  # not a task call
    ]
    assert task_totals(calls) == {
        "started": 4,
        "completed": 2,
        "failed": 1,
        "lost": 1,
        "taken_over": 1,
        "refused": 1,
        "store_errors": 3,
    }


class EchoTaskServer:
    """A fake replica pair for the extension's echo task whose first answer is saved but
    its reply lost (the replica died mid-request): the client's resend finds the task
    no longer waiting."""

    def __init__(self) -> None:
        self.status = "input_required"
        self.updates = 0

    def __call__(self, headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
        method, rid = body["method"], body["id"]
        task = {"taskId": "t1", "status": self.status, "pollIntervalMs": 1, "ttlMs": 60000}
        if method == "tools/call":
            result: dict[str, Any] = {"resultType": "task", **task}
        elif method == "tasks/update":
            self.updates += 1
            if self.updates == 1:
                self.status = "completed"  # saved, then the replica died before replying
                return HttpReply(0, None, None)
            error = {"code": -32602, "message": "Task t1 is completed, not waiting for input"}
            return HttpReply(200, "r2", {"jsonrpc": "2.0", "id": rid, "error": error})
        elif self.status == "input_required":
            question = {"method": "elicitation/create", "params": {"requestedSchema": {}}}
            result = {"resultType": "complete", **task, "inputRequests": {"echo_input": question}}
        else:
            echoed = {"content": [{"type": "text", "text": "Echo: hi"}]}
            result = {"resultType": "complete", **task, "result": echoed}
        return HttpReply(200, "r2", {"jsonrpc": "2.0", "id": rid, "result": result})


def test_an_answer_whose_reply_was_lost_and_that_was_saved_is_not_a_failure() -> None:
    server = EchoTaskServer()
    rng = random.Random(3)
    record = run_task_flow(
        server,
        "echo",
        {},
        arch="mrtr",
        wire="extension",
        think=ThinkTime(0, 0, rng),
        rng=rng,
        sleep=lambda s: None,
    )
    assert record.outcome == "completed", record.error
    assert server.updates == 2 and record.retries == 1


@needs_redis
@pytest.mark.parametrize("fsync", ["everysec", "always"])
@pytest.mark.integration
def test_a_persistent_redis_killed_and_restarted_keeps_what_it_acknowledged(
    tmp_path: Path, fsync: str
) -> None:
    server = RedisServer(data_dir=tmp_path / "redis", fsync=fsync).start()
    try:
        client = redis.Redis(port=server.port, socket_timeout=2)
        for i in range(200):
            client.set(f"task:{i}", i)
        server.kill()  # SIGKILL right after the last acknowledged write
        server.start()
        assert [int(client.get(f"task:{i}")) for i in range(200)] == list(range(200))
        assert client.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
    finally:
        server.stop()


@needs_redis
@pytest.mark.integration
def test_a_volatile_redis_restarted_has_forgotten_everything() -> None:
    with RedisServer() as server:
        client = redis.Redis(port=server.port, socket_timeout=2)
        client.set("task:1", 1)
        server.kill()
        server.start()
        assert client.get("task:1") is None


@needs_cluster
@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.integration
def test_a_task_whose_replica_is_killed_is_taken_over_and_completes(wire: str) -> None:
    config = LoadTestConfig(replicas=2, tool_mix={"provision_vm": 1.0}, task_lease_s=1.0)
    with Cluster(config) as cluster, httpx.Client(timeout=30) as http:
        post = httpx_post(http, cluster.url)
        killed: list[str] = []

        def post_then_crash(headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
            """Kill the replica that acknowledged the task, as soon as it has."""
            reply = post(headers, body)
            result = (reply.body or {}).get("result") or {}
            if result.get("resultType") == "task" and not killed and reply.served_by:
                killed.append(reply.served_by)
                cluster.kill(reply.served_by)
            return reply

        rng = random.Random(7)
        record = run_task_flow(
            post_then_crash,
            "provision_vm",
            {"name": "survivor", "seconds": 1.0},
            arch="mrtr",
            wire=wire,
            think=ThinkTime(0, 0, rng),
            rng=rng,
        )
    assert record.outcome == "completed", record.error
    assert record.task["taken_over"] and record.task["id"]
    (victim,) = killed
    assert record.detail["replicas"][-1] != victim


@needs_cluster
@pytest.mark.integration
def test_a_crash_under_load_completes_every_acknowledged_task() -> None:
    s = swarm_with_tasks("crash")
    tasks = s["tasks"]
    assert tasks["completed"] > 0 and tasks["lost"] == 0, s["errors"]
    assert tasks["started"] == tasks["completed"], s["errors"]
    assert {c["task"]["wire"] for c in s["calls"]} == set(WIRES)
    assert {c["tool"] for c in s["calls"]} == set(TASK_MIX)
    assert fault_events(s, "crash", "restarted") == ["crash", "restarted"]


@needs_cluster
@pytest.mark.integration
def test_a_store_outage_loses_no_acknowledged_task_and_callers_see_a_clear_error() -> None:
    s = swarm_with_tasks("store-outage")
    tasks = s["tasks"]
    assert fault_events(s, "store down", "store up") == ["store down", "store up"]
    # The outage was felt: new tasks refused, or running ones polled through store errors.
    assert tasks["refused"] + tasks["store_errors"] > 0
    # Every task acknowledged before (or after) the outage is still there, and completes: a
    # run whose checkpoint the dead store refused is taken over once the store is back.
    assert tasks["completed"] > 0 and tasks["lost"] == 0 and tasks["failed"] == 0, s["errors"]
    assert tasks["started"] == tasks["completed"]
    # What a refused caller saw: the store named as the cause, in a JSON-RPC error.
    refused = [c for c in s["calls"] if not c["task"].get("id")]
    assert all("Task store error" in c["error"] for c in refused if c["outcome"] != "completed")
    assert s["lost"] == 0


@needs_cluster
@pytest.mark.integration
def test_a_volatile_store_restarted_loses_the_tasks_it_held_and_clients_count_them() -> None:
    s = swarm_with_tasks("store-outage", task_store_fsync="off")
    tasks = s["tasks"]
    lost = [c for c in s["calls"] if c["task"].get("id") and c["outcome"] == "lost"]
    assert tasks["lost"] == len(lost) > 0, tasks
    assert all("lost its data" in c["error"] for c in lost)  # not "Task not found"

"""A replica refuses a task store that would lose acknowledged tasks, unless told to accept it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from loadtest.harness.redis_server import RedisServer
from server.client import SEED, Exchange, MrtrClient, task_capabilities
from server.harness.process import ServerProcess, free_port
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env
from tests.server.tasks_fixtures import RpcFailed, Wire, token

ENV = {**os.environ, "MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not RedisServer.available(), reason="needs redis-server"),
]


def start_on(url: str, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "server", "--port", str(free_port()), "--task-store", url]
    return subprocess.run([*command, *flags], capture_output=True, text=True, env=ENV, timeout=60)


def test_a_redis_without_an_append_only_file_is_refused() -> None:
    with RedisServer() as volatile:
        refused = start_on(volatile.url)
    assert refused.returncode != 0
    assert "appendonly" in refused.stderr
    assert "--task-store-volatile" in refused.stderr


def test_a_redis_that_evicts_is_refused(tmp_path: Path) -> None:
    with RedisServer(data_dir=tmp_path) as redis:
        import redis as redis_py

        redis_py.Redis.from_url(redis.url).config_set("maxmemory-policy", "allkeys-lru")
        refused = start_on(redis.url)
    assert refused.returncode != 0
    assert "maxmemory-policy is allkeys-lru" in refused.stderr


def test_a_durable_redis_is_served_and_a_volatile_one_when_asked(tmp_path: Path) -> None:
    with RedisServer(data_dir=tmp_path) as durable:
        ServerProcess(args=["--task-store", durable.url], env=ENV).start().stop()
    with RedisServer() as volatile:
        replica = ServerProcess(
            args=["--task-store", volatile.url, "--task-store-volatile"], env=ENV
        )
        replica.start().stop()


def test_a_task_lost_with_the_stores_data_is_reported_as_such(tmp_path: Path) -> None:
    with RedisServer() as volatile:
        replica = ServerProcess(
            args=["--task-store", volatile.url, "--task-store-volatile"], env=ENV
        )
        replica.start()
        try:
            with MrtrClient(replica.url) as client:
                capabilities = task_capabilities(client.options.capabilities(), SEED)

                def get(task_id: str) -> dict[str, object]:
                    exchange = Exchange("tasks/get", {"taskId": task_id}, capabilities)
                    headers, body = exchange.next_request()
                    return httpx.post(replica.url, json=body, headers=headers, timeout=10).json()

                flow = client.task_flow(SEED)
                client.run(flow.create("echo", {}, ttl_ms=60_000, max_rounds=4))
                flow.created()
                task_id = flow.task_id
                assert task_id and "result" in get(task_id)
                volatile.stop()
                volatile.start()  # the same port, empty
                # The first call after the restart may meet the old, broken connection.
                for _ in range(10):
                    lost = get(task_id)["error"]
                    if "unavailable" not in lost["message"]:
                        break
                    time.sleep(0.2)
                stranger = get("echo_00000000-0000-0000-0000-000000000000")["error"]
        finally:
            replica.stop()
    assert lost.get("data", {}).get("reason") == "store_lost_data", lost
    assert "lost its data" in lost["message"]
    assert stranger["message"].startswith("Task not found")


def create_echo(url: str) -> dict[str, object]:
    return Wire([url], token=token("erin"))("tools/call", {"name": "echo", "task": {"ttl": 60_000}})


def refused_once_connected(url: str) -> RpcFailed:
    """The error of a task call, once the replica's connection to a restarted Redis is new
    (the first call after a restart may still meet the old, broken one)."""
    for _ in range(20):
        with pytest.raises(RpcFailed) as refused:
            create_echo(url)
        if "unavailable" not in refused.value.message:
            return refused.value
        time.sleep(0.2)
    raise AssertionError("the replica never reconnected")


def test_a_redis_first_reached_after_start_is_checked_when_reached() -> None:
    port = free_port()
    args = ["--task-store", f"redis://127.0.0.1:{port}/0", "--task-store-timeout-s", "0.5"]
    replica = ServerProcess(args=args, env=ENV).start()  # no Redis yet: served, unchecked
    try:
        with RedisServer(port=port):  # no append-only file
            refused = refused_once_connected(replica.url)
    finally:
        replica.stop()
    assert refused.http_status == 503
    assert "could lose tasks: appendonly is not yes" in refused.message


def test_a_redis_restarted_without_its_append_only_file_gets_no_new_tasks(tmp_path: Path) -> None:
    durable = RedisServer(data_dir=tmp_path).start()
    replica = ServerProcess(args=["--task-store", durable.url], env=ENV).start()
    try:
        assert create_echo(replica.url)["task"]
        durable.stop()
        with RedisServer(port=durable.port):  # the same address, now volatile
            refused = refused_once_connected(replica.url)
    finally:
        replica.stop()
        durable.stop()
    assert "could lose tasks: appendonly is not yes" in refused.message

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

ENV = {**os.environ, "MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}

pytestmark = pytest.mark.skipif(not RedisServer.available(), reason="needs redis-server")


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

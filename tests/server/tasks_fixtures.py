"""Fixtures for the task tests: a throwaway Redis, replicas that share it, raw task messages.

`Wire` sends one JSON-RPC message at a time (built by the reference client's `Exchange`,
so headers and `_meta` follow the 2026-07-28 transport) to the next replica in turn, as a
round-robin load balancer would, and remembers which replica got which message.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from loadtest.harness.redis_server import RedisServer
from server.client import Exchange, parse_body, task_capabilities
from server.harness.process import ServerProcess
from server.transport.auth import mint_token
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env

#: Replicas poll fast in tests, so whole task flows take a fraction of a second.
POLL_INTERVAL_MS = 20
FORM = {"elicitation": {"form": {}}}
SEED_CAPABILITIES = task_capabilities(FORM, "seed")
EXTENSION_CAPABILITIES = task_capabilities(FORM, "extension")


def token(principal: str) -> str:
    """A bearer token for `principal`, signed with the test secret."""
    return mint_token(principal, JWT_SECRET)


def start_replica(*args: str) -> ServerProcess:
    """A replica in its own process with the test keys, polling fast."""
    env = {
        **os.environ,
        "MRTR_STATE_KEYS": state_keys_env(KEY_A),
        "MRTR_JWT_SECRET": JWT_SECRET,
    }
    extra = ["--task-poll-interval-ms", str(POLL_INTERVAL_MS), *args]
    return ServerProcess(args=extra, env=env).start()


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A real `redis-server` on a free port, with the append-only file a task store needs.

    Stopped by pid at the end, also when the test fails.
    """
    if not RedisServer.available():
        pytest.skip("redis-server is not installed (make setup installs it)")
    with (
        tempfile.TemporaryDirectory(prefix="mrtr-redis-") as data,
        RedisServer(data_dir=Path(data)) as server,
    ):
        yield server


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """The URL of a `redis_server` that lives as long as the test module."""
    with redis_server() as server:
        yield server.url


@contextlib.contextmanager
def running_replicas(count: int, *args: str) -> Iterator[list[ServerProcess]]:
    """`count` replicas started side by side (`start_replica` arguments), stopped at the end."""
    with ThreadPoolExecutor(count) as pool:
        starting = [pool.submit(start_replica, *args) for _ in range(count)]
    started = [f.result() for f in starting if f.exception() is None]
    try:
        if len(started) < count:
            raise next(f.exception() for f in starting if f.exception() is not None)
        yield started
    finally:
        for process in started:
            process.stop()


class RpcFailed(Exception):
    """A JSON-RPC error response, with the HTTP status it came with."""

    def __init__(self, error: dict[str, Any], http_status: int) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.data = error.get("data")
        self.http_status = http_status


@dataclass
class Wire:
    """Sends task messages one by one to the replicas in turn (round robin)."""

    urls: list[str]
    capabilities: dict[str, Any] = field(default_factory=lambda: dict(SEED_CAPABILITIES))
    token: str | None = None
    #: (method, url) of every message sent, in order.
    sent: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._next_url = itertools.cycle(self.urls)

    def response(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON-RPC response) for one message."""
        headers, body = Exchange(
            method, params, self.capabilities, max_rounds=1, token=self.token
        ).next_request()
        url = next(self._next_url)
        self.sent.append((method, url))
        reply = httpx.post(url, json=body, headers=headers, timeout=10.0)
        message = parse_body(reply)
        assert message is not None and message["id"] == body["id"], reply.text
        return reply.status_code, message

    def __call__(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one message, or RpcFailed."""
        status, message = self.response(method, params)
        if "error" in message:
            raise RpcFailed(message["error"], status)
        return message["result"]

    def poll(self, task_id: str, until: set[str], timeout_s: float = 10.0) -> dict[str, Any]:
        """`tasks/get` every pollInterval until the status is one of `until`."""
        deadline = time.monotonic() + timeout_s
        while True:
            task = self("tasks/get", {"taskId": task_id})
            if task["status"] in until:
                return task
            assert time.monotonic() < deadline, f"task stayed {task['status']}"
            time.sleep(task.get("pollInterval", task.get("pollIntervalMs", 100)) / 1000)


class RoundRobin(httpx.BaseTransport):
    """An httpx transport that sends each request to the next replica in turn."""

    def __init__(self, urls: list[str]) -> None:
        self._next = itertools.cycle([httpx.URL(u) for u in urls])
        self._http = httpx.HTTPTransport()
        #: The port of the replica each request went to, in order.
        self.ports: list[int | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        target = next(self._next)
        request.url = request.url.copy_with(host=target.host, port=target.port)
        self.ports.append(target.port)
        return self._http.handle_request(request)

    def close(self) -> None:
        self._http.close()

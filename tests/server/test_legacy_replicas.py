"""Legacy answers across replicas: a shared Redis store, a sticky balancer, or an honest error.

Every test starts real processes (replicas, `redis-server`, `haproxy`) on free ports of
127.0.0.1 and stops them by pid, also when it fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from loadtest.harness.haproxy import Backend, HAProxy, render_config
from loadtest.harness.redis_server import RedisServer
from server.client import LegacyClient, McpError
from server.harness.process import ServerProcess, free_port, wait_until_healthy
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env, user_answers
from tests.server.probes import health, holds_nothing, metric, wait_for

pytestmark = pytest.mark.integration


@contextmanager
def running_redis() -> Iterator[RedisServer]:
    """A `redis-server` with no persistence, for one test; stopped by pid at the end."""
    if not RedisServer.available():
        pytest.skip("redis-server is not installed")
    with RedisServer() as server:
        yield server


@contextmanager
def two_replicas(*args: str) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two replicas with the tests' keys, started side by side; both stopped at the end."""
    env = {"MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}
    pair = (ServerProcess(args=args, env=env), ServerProcess(args=args, env=env))
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda replica: replica.start(), pair))
        yield pair
    finally:
        for replica in pair:
            replica.stop()


@pytest.fixture(scope="module")
def memory_pair() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two replicas whose legacy store is their own memory."""
    with two_replicas() as pair:
        yield pair


@pytest.fixture(scope="module")
def redis_pair() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two replicas sharing one Redis legacy store."""
    with running_redis() as redis_server, two_replicas("--legacy-store", redis_server.url) as pair:
        yield pair


@pytest.fixture
def haproxy(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start HAProxy in front of replicas (round-robin, optionally cookie-sticky): its /mcp URL."""
    started: list[HAProxy] = []

    def start(backends: list[ServerProcess], *, sticky: bool) -> str:
        if not HAProxy.available():
            pytest.skip("haproxy is not installed")
        port = free_port()
        workdir = tmp_path / f"haproxy-{port}"
        workdir.mkdir()
        admin = workdir / "admin.sock"
        config = render_config(
            lb_port=port,
            backends=[Backend(f"s{i}", b.port) for i, b in enumerate(backends, start=1)],
            sticky=sticky,
            admin_socket=admin,
        )
        balancer = HAProxy(config, workdir)
        started.append(balancer)
        balancer.start(admin)
        wait_until_healthy(f"http://127.0.0.1:{port}/healthz", 10.0, balancer.process)
        return f"http://127.0.0.1:{port}/mcp"

    try:
        yield start
    finally:
        for balancer in started:
            balancer.stop()


def test_answer_on_other_replica_completes_with_redis_store(
    redis_pair: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = redis_pair
    relayed = 'legacy_answers_total{outcome="relayed"}'
    before = metric(b.base_url, relayed)
    with LegacyClient(a.url, answer_url=b.url, handlers=user_answers()) as client:
        done = client.call_tool("get_weather", {"location": "Lisbon"})
        # The session lives in Redis, so the other replica knows it too.
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        on_b = httpx.post(b.url, json=ping, headers=client.session.headers())
        assert on_b.json()["result"] == {}
    assert done.text.startswith("Weather in Lisbon for octocat:")
    assert metric(b.base_url, relayed) == before + 1
    assert holds_nothing(a.base_url) and health(a.base_url)["open_sessions"] == 0


def test_answer_on_other_replica_is_an_honest_error_with_memory_store(
    memory_pair: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = memory_pair
    unknown = 'legacy_answers_total{outcome="unknown_session"}'
    before = metric(b.base_url, unknown)
    client = LegacyClient(a.url, answer_url=b.url, handlers=user_answers())
    with client, pytest.raises(McpError) as refused:
        client.call_tool("get_weather", {"location": "Lisbon"})
    assert refused.value.http_status == 404
    assert refused.value.message == (
        f"Session not found on replica {b.replica_id} (legacy store: memory)"
    )
    assert metric(b.base_url, unknown) == before + 1
    # The caller hung up; the replica holding the call lets it go.
    wait_for(lambda: holds_nothing(a.base_url))


def test_cookie_sticky_balancer_completes_with_memory_store(
    memory_pair: tuple[ServerProcess, ServerProcess], haproxy: Callable[..., str]
) -> None:
    a, b = memory_pair
    local = 'legacy_answers_total{outcome="local"}'
    before = [metric(r.base_url, local) for r in (a, b)]
    url = haproxy([a, b], sticky=True)
    texts = []
    for city in ("Oslo", "Rome", "Bern", "Nice"):
        # Each client gets its own cookie, so sessions spread over both replicas.
        with (
            httpx.Client(timeout=10.0) as http,
            LegacyClient(url, http=http, handlers=user_answers()) as client,
        ):
            texts.append(client.call_tool("get_weather", {"location": city}).text)
            assert http.cookies.get("SERVERID") in ("s1", "s2")
    assert all(t.startswith("Weather in") for t in texts)
    assert [metric(r.base_url, local) - n for r, n in zip((a, b), before, strict=True)] == [
        2.0,
        2.0,
    ]


def test_round_robin_balancer_loses_answers_with_memory_store(
    memory_pair: tuple[ServerProcess, ServerProcess], haproxy: Callable[..., str]
) -> None:
    url = haproxy(list(memory_pair), sticky=False)
    client = LegacyClient(url, handlers=user_answers())
    with client, pytest.raises(McpError) as lost:
        client.call_tool("get_weather", {"location": "Oslo"})
    assert lost.value.http_status == 404 and "Session not found" in lost.value.message


def test_round_robin_balancer_completes_with_redis_store(
    redis_pair: tuple[ServerProcess, ServerProcess], haproxy: Callable[..., str]
) -> None:
    replicas = redis_pair
    answers = ['legacy_answers_total{outcome="relayed"}', 'legacy_answers_total{outcome="local"}']
    before = sum(metric(r.base_url, name) for r in replicas for name in answers)
    url = haproxy(list(replicas), sticky=False)
    with LegacyClient(url, handlers=user_answers()) as client:
        texts = [client.call_tool("get_weather", {"location": c}).text for c in ("Oslo", "Rome")]
    assert all(t.startswith("Weather in") for t in texts)
    assert sum(metric(r.base_url, name) for r in replicas for name in answers) == before + 2


def test_killing_redis_mid_call_is_an_error_not_a_hang() -> None:
    with (
        running_redis() as redis_server,
        two_replicas("--legacy-store", redis_server.url) as (a, b),
        httpx.Client(timeout=10.0) as http,
    ):
        client = LegacyClient(a.url, answer_url=b.url, http=http, handlers=user_answers())
        client.initialize()
        arguments = {"location": "Oslo"}
        exchange = client.exchange("tools/call", {"name": "get_weather", "arguments": arguments})
        headers, body = exchange.next_request()
        started = time.monotonic()
        with http.stream("POST", a.url, json=body, headers=headers) as response:
            lines = response.iter_lines()
            while not exchange.server_requests:
                exchange.feed_line(next(lines))
            redis_server.kill()
            # The answer reaches the other replica, which cannot reach the store.
            (asked,) = exchange.server_requests
            _, answer = exchange.answer_request(asked, {"action": "accept", "content": {}})
            refused = http.post(b.url, json=answer, headers=client.session.headers())
            assert refused.status_code == 503
            assert "legacy store unavailable" in refused.json()["error"]["message"]
            # The waiting replica lost its answer channel: the call ends with an error.
            with pytest.raises(McpError, match="legacy store unavailable"):
                for line in lines:
                    exchange.feed_line(line)
        assert time.monotonic() - started < 8.0
        # New sessions fail fast and clearly while the store is down.
        _, initialize = client.session.initialize_request()
        assert http.post(a.url, json=initialize).status_code == 503
        assert metric(b.base_url, 'legacy_answers_total{outcome="store_error"}') == 1.0
        assert metric(b.base_url, "legacy_store_errors_total") >= 1.0
        wait_for(lambda: holds_nothing(a.base_url))

"""The cluster holds against the attacks on availability, through HAProxy.

Real sockets at HAProxy's port: a slow body is cut there, never holding a replica; a
client that leaves aborts its request at the replica too; CPU-heavy calls leave every
replica in rotation.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.harness.haproxy import RuntimeApi
from loadtest.soak.task_waits import raw_request, working_task
from server.client import SEED, Handlers, MrtrClient, accept, task_capabilities
from server.harness.process import ServerProcess
from tests.loadtest.balanced_replica import replica_behind_haproxy

pytestmark = pytest.mark.integration

SLOW_BODY = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n{"
)


@pytest.fixture
def one_replica_behind_haproxy(tmp_path: Path) -> Iterator[tuple[int, ServerProcess]]:
    """HAProxy with a 1 s request timeout in front of one replica whose own body timeout
    is long (60 s): only HAProxy can cut a slow body in time."""
    args = ["--body-timeout-s", "60"]
    with replica_behind_haproxy(tmp_path, args, request_timeout_s=1.0) as balanced:
        yield balanced.lb_port, balanced.replica


def answer_of(sock: socket.socket, timeout_s: float = 10) -> bytes:
    """What comes back on `sock` until it closes."""
    sock.settimeout(timeout_s)
    received = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_haproxy_cuts_a_slow_body_itself_and_the_replica_never_holds_it(
    one_replica_behind_haproxy: tuple[int, ServerProcess],
) -> None:
    lb_port, replica = one_replica_behind_haproxy
    with socket.create_connection(("127.0.0.1", lb_port)) as sock:
        sock.sendall(SLOW_BODY)
        started = time.monotonic()
        time.sleep(0.5)
        held = httpx.get(f"{replica.base_url}/healthz", timeout=5).json()["in_flight"]
        answer = answer_of(sock)
        waited_s = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408")
    assert waited_s < 3  # the request timeout (1 s), not the replica's 60 s
    assert held == 0  # HAProxy waited for the body before choosing a replica


def test_haproxy_refuses_a_16_mib_header(
    one_replica_behind_haproxy: tuple[int, ServerProcess],
) -> None:
    lb_port, _ = one_replica_behind_haproxy
    with socket.create_connection(("127.0.0.1", lb_port)) as sock:
        request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (16 << 20)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request + b"\r\n\r\n")
        assert answer_of(sock).startswith(b"HTTP/1.1 400")


def in_flight(cluster: Cluster) -> int:
    return sum(int(cluster.health(name).get("in_flight", -1)) for name in cluster.names)


def test_waits_left_at_the_balancer_end_at_the_replicas() -> None:
    config = LoadTestConfig(arch="mrtr", replicas=2, tool_mix={"provision_vm": 1.0})
    # No cap on waits: only the departure, carried through HAProxy, can end them.
    lifted = {"max_task_result_waits_per_principal": 0, "requests_per_s_per_principal": 0.0}
    with Cluster(config, server_settings=lifted) as cluster:
        task_id = working_task(cluster.url)
        capabilities = task_capabilities(Handlers().capabilities(), SEED)
        request = raw_request("tasks/result", {"taskId": task_id}, capabilities)
        for _ in range(200):
            with socket.create_connection(("127.0.0.1", cluster.lb_port)) as sock:
                sock.sendall(request)
        deadline = time.monotonic() + 5
        while in_flight(cluster) != 0:
            assert time.monotonic() < deadline, "abandoned waits still held by the replicas"
            time.sleep(0.05)


def test_four_quotes_at_the_cpu_cap_leave_every_replica_in_rotation() -> None:
    config = LoadTestConfig(arch="mrtr", replicas=2, tool_mix={"quote": 1.0})
    # Four at once from one (anonymous) caller: its cap on CPU-heavy calls lifted.
    lifted = {"max_cpu_calls_per_principal": 0, "requests_per_s_per_principal": 0.0}
    with Cluster(config, server_settings=lifted) as cluster:
        answer = Handlers(elicit=lambda params: accept(name="octocat"))

        def quote(_: int) -> str:
            with MrtrClient(cluster.url, handlers=answer) as client:
                return client.call_tool("quote", {"cpu_ms": 1000}).text

        api: RuntimeApi = cluster.api
        with ThreadPoolExecutor(4) as pool:
            quotes = [pool.submit(quote, i) for i in range(4)]
            statuses = set()
            while not all(q.done() for q in quotes):
                statuses |= {row["status"] for row in api.server_stats().values()}
                time.sleep(0.05)
            texts = [q.result() for q in quotes]
        assert all("octocat" in text for text in texts)
        assert statuses == {"UP"}
        assert all(row["chkdown"] == "0" for row in api.server_stats().values())

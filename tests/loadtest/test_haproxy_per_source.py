"""The edge bounds each source address's connections: one source's bodies that stall after
a burst cannot fill a replica while another source is served.

Real sockets at HAProxy's port, the attacker from 127.0.0.2 and the user from 127.0.0.1
(both loopback on Linux): past the attacker's bound its requests are held at the edge
and answered 429, never reaching the replica.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.harness.haproxy import (
    CONNECTIONS_PER_SOURCE,
    HAProxy,
    RuntimeApi,
)
from loadtest.soak.attacker import connect
from tests.loadtest.balanced_replica import replica_behind_haproxy

pytestmark = pytest.mark.integration

#: The bound under test, and the attacker's sockets (well past it).
PER_SOURCE = 6
ATTACK_SOCKETS = 24
#: A head for 1 MiB and 32 KiB of it: more than HAProxy's buffer, so it is passed on.
BURST_THEN_STALL = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 1048576\r\n\r\n{" + b" " * (32 * 1024)
)


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[tuple[int, RuntimeApi]]:
    """HAProxy bounding each source to `PER_SOURCE` connections (its tarpit 1 s) in front
    of one replica that waits 30 s for a body: only the edge can keep stalls off it."""
    args = ["--body-timeout-s", "30", "--body-min-rate-bytes-per-s", "1"]
    with replica_behind_haproxy(
        tmp_path, args, request_timeout_s=1.0, max_connections_per_source=PER_SOURCE
    ) as balanced:
        yield balanced.lb_port, balanced.runtime


def first_line(sock: socket.socket, deadline: float) -> bytes:
    """The start of what comes back on `sock` by `deadline` (monotonic; empty if nothing)."""
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        return sock.recv(64)
    except (TimeoutError, ConnectionResetError):
        return b""


def test_one_sources_stalled_bodies_are_held_at_the_edge_past_its_bound(
    edge: tuple[int, RuntimeApi],
) -> None:
    lb_port, api = edge
    sockets = []
    try:
        for _ in range(ATTACK_SOCKETS):
            sock = connect("127.0.0.1", lb_port)
            sock.sendall(BURST_THEN_STALL)
            sockets.append(sock)
        time.sleep(0.3)
        reached = api.sessions("r1")
        started = time.monotonic()
        served = httpx.post(
            f"http://127.0.0.1:{lb_port}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
            timeout=5,
        )
        user_s = time.monotonic() - started
        deadline = time.monotonic() + 2.5  # the tarpit's 1 s, and room
        answers = [first_line(sock, deadline) for sock in sockets]
    finally:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
    refused = sum(answer.startswith(b"HTTP/1.1 429") for answer in answers)
    # Past the bound the requests waited at the edge and were refused there; at most the
    # bound's were passed on to the replica (which still waits for their bodies).
    assert refused >= ATTACK_SOCKETS - PER_SOURCE
    assert 0 < reached <= PER_SOURCE
    # Another source is served at once, the attacker's excess held beside it.
    assert served.status_code != 429 and served.headers.get("x-served-by") == "r1"
    assert user_s < 0.9


@pytest.mark.parametrize(
    ("settings", "bound"),
    [
        ({}, CONNECTIONS_PER_SOURCE),
        ({"users": 200}, 800),  # four connections a user
        ({"rate_per_s": 100.0}, 1000),  # an open loop's arrivals over its 10 s stop timeout
    ],
)
def test_the_clusters_bound_holds_its_own_users(settings: dict[str, float], bound: int) -> None:
    if not HAProxy.available():
        pytest.skip("haproxy is not installed")
    config = LoadTestConfig(arch="mrtr", replicas=2, tool_mix={"get_weather": 1.0}, **settings)
    assert Cluster(config).connections_per_source == bound

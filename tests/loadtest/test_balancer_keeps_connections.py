"""The connections a replica holds behind the lab's HAProxy, as the simulation keeps them
(docs/model.md): a request's connection stays open idle after its answer, the next
request reuses it, even a new client's, rather than opening one of its own, and the
replica closes it once idle for its `--idle-timeout-s` (the model's `keepalive_idle_s`).
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadtest.probes.replica_load import open_connections
from tests.loadtest.balanced_replica import replica_behind_haproxy

pytestmark = pytest.mark.integration

#: The replica's idle timeout here: short, so that the test waits little for it.
IDLE_TIMEOUT_S = 1.0
#: Clients, one after another, each on a connection of its own to the balancer.
CLIENTS = 6


@pytest.fixture
def balanced_replica(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """One replica behind the lab's HAProxy (health checks a minute apart, so that none
    opens a connection of its own while the test counts): (balancer port, replica port)."""
    args = ["--idle-timeout-s", f"{IDLE_TIMEOUT_S:g}"]
    with replica_behind_haproxy(tmp_path, args, health_check_interval_ms=60_000) as balanced:
        yield balanced.lb_port, balanced.replica.port


def held(port: int) -> int:
    """The connections open on the replica's port now."""
    return open_connections({port})[port]


def test_new_clients_reuse_the_connections_kept_idle_until_the_replica_closes_them(
    balanced_replica: tuple[int, int],
) -> None:
    lb_port, replica_port = balanced_replica
    for _ in range(CLIENTS):
        client = http.client.HTTPConnection("127.0.0.1", lb_port, timeout=5)
        try:
            client.request("POST", "/mcp", body=b"{}", headers={"Content-Type": "application/json"})
            client.getresponse().read()
        finally:
            client.close()
    time.sleep(0.1)
    kept = held(replica_port)
    # Kept open idle after the answers, and reused: not one connection per client.
    assert 1 <= kept <= 2, f"{kept} connections held after {CLIENTS} clients one by one"
    deadline = time.monotonic() + IDLE_TIMEOUT_S + 2.0
    while held(replica_port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert held(replica_port) == 0, "idle connections outlived the replica's idle timeout"

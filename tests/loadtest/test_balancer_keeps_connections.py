"""The connections a replica holds behind the lab's HAProxy, as the simulation keeps them
(docs/model.md): a request's connection stays open idle after its answer, the next
request reuses it, even a new client's, rather than opening one of its own, and the
replica closes it once idle for its `--idle-timeout-s` (the model's `keepalive_idle_s`).
"""

from __future__ import annotations

import http.client
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadtest.harness.haproxy import Backend, HAProxy, render_config
from loadtest.probes.replica_load import open_connections
from server.harness.process import ServerProcess, free_port
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env

pytestmark = pytest.mark.integration

#: The replica's idle timeout here: short, so that the test waits little for it.
IDLE_TIMEOUT_S = 1.0
#: Clients, one after another, each on a connection of its own to the balancer.
CLIENTS = 6


@pytest.fixture
def balanced_replica(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """One replica behind the lab's HAProxy (health checks a minute apart, so that none
    opens a connection of its own while the test counts): (balancer port, replica port)."""
    if not HAProxy.available():
        pytest.skip("haproxy is not installed")
    env = {**os.environ, "MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}
    replica = ServerProcess(args=["--idle-timeout-s", f"{IDLE_TIMEOUT_S:g}"], env=env).start()
    try:
        admin = tmp_path / "admin.sock"
        lb_port = free_port()
        text = render_config(
            lb_port=lb_port,
            backends=[Backend("r1", replica.port)],
            sticky=False,
            admin_socket=admin,
            health_check_interval_ms=60_000,
        )
        lb = HAProxy(text, tmp_path).start(admin)
        try:
            yield lb_port, replica.port
        finally:
            lb.stop()
    finally:
        replica.stop()


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

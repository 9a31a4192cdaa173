"""HAProxy's health checks: a replica that is slow to answer but alive stays in rotation."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from loadtest.harness.haproxy import Backend, HAProxy, RuntimeApi, render_config
from server.harness.process import free_port

pytestmark = pytest.mark.integration

#: How long the fake replica takes to answer /healthz: longer than the check interval
#: (300 ms), as a loaded replica's queue is, shorter than the default check timeout.
SLOW_HEALTH_S = 0.7


class SlowHealth(BaseHTTPRequestHandler):
    """A replica busy with a queue: every health check is answered late, but answered."""

    def do_GET(self) -> None:
        time.sleep(SLOW_HEALTH_S)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # HAProxy hanging up on a check it timed out: expected here


@pytest.fixture
def slow_replica() -> Iterator[int]:
    server = QuietServer(("127.0.0.1", 0), SlowHealth)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def down_transitions(tmp_path: Path, port: int, timeout_ms: int, watch_s: float) -> int:
    """Times HAProxy marked the slow replica down in `watch_s` with this check timeout."""
    if not HAProxy.available():
        pytest.skip("haproxy is not installed")
    workdir = tmp_path / f"timeout-{timeout_ms}"
    workdir.mkdir()
    admin = workdir / "admin.sock"
    text = render_config(
        lb_port=free_port(),
        backends=[Backend("r1", port)],
        sticky=False,
        admin_socket=admin,
        health_check_timeout_ms=timeout_ms,
    )
    balancer = HAProxy(text, workdir).start(admin)
    try:
        time.sleep(watch_s)
        return int(RuntimeApi(admin).server_stats()["r1"]["chkdown"] or 0)
    finally:
        balancer.stop()


def test_a_replica_slow_to_answer_its_health_check_stays_up(
    tmp_path: Path, slow_replica: int
) -> None:
    assert down_transitions(tmp_path, slow_replica, 2000, watch_s=2.5) == 0


def test_a_check_timeout_shorter_than_the_replicas_answer_marks_it_down(
    tmp_path: Path, slow_replica: int
) -> None:
    assert down_transitions(tmp_path, slow_replica, 300, watch_s=2.5) >= 1

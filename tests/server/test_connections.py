"""Idle sockets cannot starve a replica: a connection cap answers 503, the file limit is raised."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx

from server.harness.process import ServerProcess
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env

ENV = {**os.environ, "MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}
CAP = 8


@contextlib.contextmanager
def idle_sockets(port: int, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections that send nothing, closed at the end."""
    opened = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
    try:
        yield opened
    finally:
        for sock in opened:
            sock.close()


def test_beyond_the_connection_cap_a_request_gets_a_503_and_below_it_is_served() -> None:
    replica = ServerProcess(args=["--max-connections", str(CAP)], env=ENV).start()
    try:
        with idle_sockets(replica.port, CAP + 2):
            refused = httpx.get(f"{replica.base_url}/healthz", timeout=10)
        assert refused.status_code == 503
        served = httpx.get(f"{replica.base_url}/healthz", timeout=10)  # the sockets closed
        assert served.status_code == 200
    finally:
        replica.stop()


def test_the_open_file_limit_is_raised_to_the_hard_limit() -> None:
    replica = ServerProcess(env=ENV).start()
    try:
        assert replica.process is not None
        limits = Path(f"/proc/{replica.process.pid}/limits").read_text()
        row = next(line for line in limits.splitlines() if line.startswith("Max open files"))
        soft, hard = row.split()[3:5]
        assert soft == hard
    finally:
        replica.stop()

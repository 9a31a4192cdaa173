"""Idle sockets cannot starve a replica: a connection cap answers 503, the file limit is raised."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server.harness.process import ServerProcess
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env

pytestmark = pytest.mark.integration

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


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the replica closed `sock` (recv sees end of file, or a reset) within 15 s."""
    sock.settimeout(15)
    try:
        while sock.recv(4096):
            pass  # a response to a complete earlier request, then the close
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_sockets_that_never_finish_their_headers_are_closed_and_requests_still_served() -> None:
    # A long idle timeout, so only the header timeout can close these sockets.
    args = ["--header-timeout-s", "1", "--idle-timeout-s", "60"]
    replica = ServerProcess(args=args, env=ENV).start()
    try:
        with idle_sockets(replica.port, 3) as (silent, partial, second):
            partial.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            second.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert second.recv(4096).startswith(b"HTTP/1.1 200")
            second.sendall(b"GET /healthz HTTP/1.1\r\n")  # the next request, never finished
            served = httpx.get(f"{replica.base_url}/healthz", timeout=10)
            assert served.status_code == 200
            assert closed_by_peer(silent)
            assert closed_by_peer(partial)
            assert closed_by_peer(second)
    finally:
        replica.stop()


def read_response(sock: socket.socket) -> bytes:
    """One whole HTTP response (headers, then Content-Length bytes of body) from `sock`."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(4096)
    return head


def test_a_connection_that_sent_its_headers_is_not_cut_by_the_header_timeout() -> None:
    args = ["--header-timeout-s", "1", "--idle-timeout-s", "60"]
    replica = ServerProcess(args=args, env=ENV).start()
    try:
        with idle_sockets(replica.port, 1) as (sock,):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert read_response(sock).startswith(b"HTTP/1.1 200")
            # Idle between requests: only the (long) idle timeout applies, not the header one.
            sock.settimeout(3)
            with pytest.raises(TimeoutError):
                sock.recv(1)  # b"" (closed) would return at once instead
    finally:
        replica.stop()

"""A request is bounded as it arrives: slow bodies are cut, huge or numerous headers refused.

Real sockets against a replica process, as an attacker would send them.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from server.harness.process import ServerProcess
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env
from tests.server.test_bad_input import META, VERSION

pytestmark = pytest.mark.integration

ENV = {**os.environ, "MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}
LIST = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
).encode()
MRTR_HEADERS = (
    b"Content-Type: application/json\r\nMCP-Protocol-Version: %s\r\nMcp-Method: tools/list\r\n"
    % VERSION.encode()
)


def start(*args: str) -> ServerProcess:
    # A long idle timeout and rate, so only the limit under test can close a socket.
    base = ["--idle-timeout-s", "60", "--rate-per-principal", "0"]
    return ServerProcess(args=[*base, *args], env=ENV).start()


@pytest.fixture(scope="module", params=["httptools", "h11"])
def replica(request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    process = start("--http", request.param, "--body-timeout-s", "1", "--max-connections", "40")
    yield process
    process.stop()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def head(content_length: int, extra: bytes = b"") -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + MRTR_HEADERS
        + extra
        + b"Content-Length: %d\r\n\r\n" % content_length
    )


def answer_and_close(sock: socket.socket) -> bytes:
    """Everything the replica sends until it closes the connection (or 10 s pass)."""
    received = b""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    return received


def test_a_body_that_stops_after_one_byte_is_cut_with_a_408(replica: ServerProcess) -> None:
    with connect(replica.port) as sock:
        sock.sendall(head(100) + b"{")
        sent = time.monotonic()
        answer = answer_and_close(sock)
        waited_s = time.monotonic() - sent
    assert answer.startswith(b"HTTP/1.1 408")
    assert 0.8 < waited_s < 4


def test_a_slow_but_steady_body_is_served(replica: ServerProcess) -> None:
    # 640 bytes at about 2 KiB/s: longer than the 1 s body timeout, faster than the
    # minimum rate (1 KiB/s), so every second it takes is earned.
    body = LIST + b" " * (640 - len(LIST))
    with connect(replica.port) as sock:
        sock.sendall(head(len(body)))
        started = time.monotonic()
        for offset in range(0, len(body), 40):
            sock.sendall(body[offset : offset + 40])
            time.sleep(0.02)
        answer = first_bytes(sock)
        assert time.monotonic() - started > 0.3
    assert answer.startswith(b"HTTP/1.1 200")


def first_bytes(sock: socket.socket) -> bytes:
    """The first bytes of the replica's answer."""
    sock.settimeout(10)
    return sock.recv(65536)


def healthz_status(replica: ServerProcess) -> int:
    return httpx.get(f"{replica.base_url}/healthz", timeout=10).status_code


def test_slow_bodies_holding_every_connection_are_released(replica: ServerProcess) -> None:
    # One short of the cap (40): the next connection, a health check's, finds it full.
    sockets: list[socket.socket] = []
    try:
        for _ in range(39):
            sockets.append(connect(replica.port))
            sockets[-1].sendall(head(100) + b"{")
        time.sleep(0.2)  # every head read: the replica holds 39 requests waiting for bodies
        assert healthz_status(replica) == 503
        time.sleep(1.2)  # the body timeout
        assert healthz_status(replica) == 200
        assert all(answer_and_close(sock).startswith(b"HTTP/1.1 408") for sock in sockets)
    finally:
        for sock in sockets:
            sock.close()


def test_a_16_mib_header_is_refused_with_431(replica: ServerProcess) -> None:
    with connect(replica.port) as sock:
        big = b"X-Big: " + b"a" * (16 << 20) + b"\r\n"
        # Closed while the rest is still on its way: the answer came first.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head(len(LIST), big) + LIST)
        answer = answer_and_close(sock)
    assert answer.startswith(b"HTTP/1.1 431")
    assert httpx.get(f"{replica.base_url}/healthz", timeout=10).status_code == 200


@pytest.mark.parametrize("count", [101, 5000])
def test_too_many_header_fields_are_refused_with_431(replica: ServerProcess, count: int) -> None:
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(count))
    with connect(replica.port) as sock:
        sock.sendall(head(len(LIST), fields) + LIST)
        assert answer_and_close(sock).startswith(b"HTTP/1.1 431")


def test_headers_within_the_limits_are_served(replica: ServerProcess) -> None:
    fields = b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 100) for i in range(90))
    with connect(replica.port) as sock:
        sock.sendall(head(len(LIST), fields) + LIST)
        assert first_bytes(sock).startswith(b"HTTP/1.1 200")


def test_a_kept_alive_connection_serves_a_second_request_after_a_slow_one(
    replica: ServerProcess,
) -> None:
    with connect(replica.port) as sock:
        sock.sendall(head(len(LIST)))
        time.sleep(0.3)
        sock.sendall(LIST)
        assert first_bytes(sock).startswith(b"HTTP/1.1 200")
        # The next request's head in pieces, then its body after a pause within the limit.
        sock.sendall(head(len(LIST))[:20])
        time.sleep(0.2)
        sock.sendall(head(len(LIST))[20:])
        time.sleep(0.3)
        sock.sendall(LIST)
        assert first_bytes(sock).startswith(b"HTTP/1.1 200")


def read_answer(sock: socket.socket) -> bytes:
    """One whole answer (head and Content-Length bytes of body) from `sock`."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head


def test_after_an_early_413_the_rest_of_the_body_is_dropped_and_the_next_request_served(
    replica: ServerProcess,
) -> None:
    # Over the 1 MiB body limit: answered before the body is read. A proxy in front
    # (HAProxy) sends the body all the same; the connection must survive it.
    too_long = 2_000_000
    with connect(replica.port) as sock:
        sock.sendall(head(too_long))
        assert read_answer(sock).startswith(b"HTTP/1.1 413")
        sock.sendall(b" " * too_long + head(len(LIST)) + LIST)
        assert read_answer(sock).startswith(b"HTTP/1.1 200")


def test_a_huge_head_after_an_early_413_still_closes_the_connection(
    replica: ServerProcess,
) -> None:
    with connect(replica.port) as sock:
        sock.sendall(head(2_000_000))
        assert read_answer(sock).startswith(b"HTTP/1.1 413")
        big = b"X-Big: " + b"a" * (16 << 20) + b"\r\n"
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(b" " * 2_000_000 + head(len(LIST), big) + LIST)
        assert answer_and_close(sock) == b""  # closed, nothing served

"""Through HAProxy, a request's deadline holds as it does at a replica.

HAProxy waits for a body before it picks a replica (`option http-buffer-request`) within
`timeout http-request`, counted from the request's first byte as the replicas count
`--body-timeout-s`; a body larger than its buffer (16 KiB) is passed on once the buffer is
full, and the rest is held to the replica's minimum rate. Real sockets at HAProxy's port.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.loadtest.balanced_replica import replica_behind_haproxy
from tests.server.test_request_deadline import (
    BODY_BYTES,
    RATE_BYTES_PER_S,
    drip,
    head,
    padded_list,
)
from tests.server.test_wire_limits import first_bytes

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lb_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """HAProxy (1 s for a whole request) in front of a replica with the same 1 s and a
    minimum rate of 8 KiB/s."""
    args = ["--body-timeout-s", "1", "--body-min-rate-bytes-per-s", str(RATE_BYTES_PER_S)]
    with replica_behind_haproxy(
        tmp_path_factory.mktemp("haproxy"),
        [*args, "--rate-per-principal", "0"],
        request_timeout_s=1.0,
    ) as balanced:
        yield balanced.lb_port


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def test_a_drip_under_the_rate_is_cut_by_haproxy_at_the_whole_requests_time(
    lb_port: int,
) -> None:
    body = padded_list(BODY_BYTES)
    with connect(lb_port) as sock:
        sock.sendall(head(len(body)))
        started = time.monotonic()
        answer = drip(sock, body, 900, 0.125)
        waited_s = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408")
    assert waited_s < 3


def test_a_burst_past_haproxys_buffer_then_silence_is_cut_by_the_replica(
    lb_port: int,
) -> None:
    # 24 KiB: more than HAProxy buffers, so it is passed on; the replica's rule then gives
    # it 3 s at 8 KiB/s, not the 24 s a second per KiB would have.
    body = padded_list(BODY_BYTES)
    with connect(lb_port) as sock:
        started = time.monotonic()
        sock.sendall(head(len(body)) + body[: 24 * 1024])
        answer = first_bytes(sock)
        waited_s = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"request body too slow" in answer  # the replica's answer, relayed
    assert 1.5 < waited_s < 6


def test_a_whole_body_with_its_head_is_served_through_haproxy(lb_port: int) -> None:
    body = padded_list(BODY_BYTES)
    with connect(lb_port) as sock:
        sock.sendall(head(len(body)) + body)
        assert first_bytes(sock).startswith(b"HTTP/1.1 200")

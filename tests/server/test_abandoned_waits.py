"""No wait outlives its caller: `tasks/result` on a working task, abandoned or hoarded.

Real sockets against a replica process: a wait whose client closed its connection ends at
once, so thousands of them cannot hold the replica at its cap; and one principal waits on
only so many tasks at once.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from server.client import Exchange
from server.harness.process import ServerProcess, raise_file_limit
from tests.server.probes import health, wait_for
from tests.server.tasks_fixtures import SEED_CAPABILITIES, Wire, start_replica, token

pytestmark = pytest.mark.integration

#: More sockets than the replica's default connection cap (2,048): the attack that once
#: took a replica down.
ATTACK_SOCKETS = 2100


def raw_request(method: str, params: dict[str, Any], bearer: str) -> bytes:
    """One whole HTTP request for a JSON-RPC message, as bytes for a raw socket."""
    headers, body = Exchange(method, params, SEED_CAPABILITIES, token=bearer).next_request()
    data = json.dumps(body).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(data)}\r\n\r\n"
    ).encode() + data


def working_task(wire: Wire) -> str:
    """The id of a `provision_vm` task that stays working for a minute."""
    params: dict[str, Any] = {
        "name": "provision_vm",
        "arguments": {"name": "web-1", "seconds": 60},
        "task": {"ttl": 120000},
    }
    first = wire("tools/call", params)
    retry = {
        **params,
        "inputResponses": {"confirm_provision": {"action": "accept", "content": {"confirm": True}}},
    }
    if "requestState" in first:
        retry["requestState"] = first["requestState"]
    created = wire("tools/call", retry)
    assert created["task"]["status"] == "working"
    return str(created["task"]["taskId"])


@pytest.fixture(scope="module")
def replica() -> Iterator[ServerProcess]:
    # No cap on waits, nor on the rate: only noticing the departed client can help here.
    process = start_replica(
        "--max-task-result-waits-per-principal", "0", "--rate-per-principal", "0"
    )
    yield process
    process.stop()


def test_waits_whose_sockets_closed_at_once_do_not_hold_the_replica(
    replica: ServerProcess,
) -> None:
    bearer = token("mallory")
    task_id = working_task(Wire([replica.url], token=bearer))
    request = raw_request("tasks/result", {"taskId": task_id}, bearer)
    raise_file_limit(ATTACK_SOCKETS)

    def send_and_leave(_: int) -> None:
        with socket.create_connection(("127.0.0.1", replica.port), timeout=10) as sock:
            sock.sendall(request)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(send_and_leave, range(ATTACK_SOCKETS)))
    left = time.monotonic()
    # Without noticing the departures the replica held them all for 30 s (its wait bound),
    # answering every request, /healthz included, with 503.
    wait_for(lambda: health_or_503(replica) == 0, timeout_s=5)
    assert time.monotonic() - left < 5


def health_or_503(replica: ServerProcess) -> int:
    """The replica's requests in flight, or -1 while it answers /healthz with 503."""
    try:
        return int(health(replica.base_url)["in_flight"])
    except (ValueError, KeyError, httpx.HTTPError):
        return -1


def test_a_wait_whose_client_stays_returns_when_the_task_needs_input(
    replica: ServerProcess,
) -> None:
    wire = Wire([replica.url], token=token("patient"))
    created = wire("tools/call", {"name": "echo", "task": {"ttl": 60000}})
    asked = wire("tasks/result", {"taskId": created["task"]["taskId"]})
    assert asked["resultType"] == "input_required"
    assert "echo_input" in asked["inputRequests"]


def test_one_principal_waits_on_at_most_its_cap_and_others_still_wait() -> None:
    process = start_replica(
        "--max-task-result-waits-per-principal", "2", "--task-result-wait-s", "3"
    )
    try:
        hoarder = Wire([process.url], token=token("hoarder"))
        other = Wire([process.url], token=token("other"))
        hoarded = working_task(hoarder)
        theirs = working_task(other)

        def result_of(wire: Wire, task_id: str) -> tuple[float, dict[str, Any]]:
            started = time.monotonic()
            _, message = wire.response("tasks/result", {"taskId": task_id})
            return time.monotonic() - started, message

        with ThreadPoolExecutor(4) as pool:
            waiting = [pool.submit(result_of, hoarder, hoarded) for _ in range(2)]
            wait_for(lambda: health(process.base_url)["in_flight"] >= 2)
            third_s, third = result_of(hoarder, hoarded)
            others = pool.submit(result_of, other, theirs)
            waited = [future.result() for future in [*waiting, others]]
        # The third wait of one principal is answered at once, with the polling answer.
        assert third_s < 1
        assert "still working" in third["error"]["message"]
        # The two within the cap, and another principal's, waited out their bound.
        assert all(2.5 < seconds < 10 for seconds, _ in waited)
        assert all("still working" in message["error"]["message"] for _, message in waited)
    finally:
        process.stop()

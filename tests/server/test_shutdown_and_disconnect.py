"""A replica stops promptly and stops work nobody waits for: SIGTERM, and a client that left."""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

import httpx
import pytest

from server.harness.process import ServerProcess
from server.tools.crunch import CRUNCH_MAX_UNITS
from tests.server.conftest import JWT_SECRET, KEY_A, LEGACY_INITIALIZE, state_keys_env
from tests.server.probes import health, wait_for
from tests.server.test_bad_input import call_body, headers

pytestmark = pytest.mark.integration


def start(*args: str) -> ServerProcess:
    env = {**os.environ, "MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}
    return ServerProcess(args=args, env=env).start()


def events(lines: Any) -> Any:
    for line in lines:
        if line.startswith("data:"):
            yield json.loads(line[5:])


def test_sigterm_ends_held_legacy_calls_with_an_error_then_exits() -> None:
    replica = start("--shutdown-timeout-s", "5")
    try:
        with httpx.Client(timeout=30) as http:
            opened = http.post(replica.url, json=LEGACY_INITIALIZE)
            session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
            body = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "get_weather", "arguments": {"location": "Oslo"}},
            }
            with http.stream("POST", replica.url, json=body, headers=session) as stream:
                received = events(stream.iter_lines())
                question = next(received)
                assert question["method"] == "elicitation/create"  # the call is now held
                signalled = time.monotonic()
                assert replica.process is not None
                replica.process.send_signal(signal.SIGTERM)
                last = next(received)
        assert last["id"] == 2
        assert "shutting down" in last["error"]["message"]
        replica.process.wait(timeout=15)
        assert time.monotonic() - signalled < 10
    finally:
        replica.stop()


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_crunch_whose_client_left_stops(era: str) -> None:
    replica = start()
    try:
        if era == "2026-07-28":
            body = call_body("crunch", {"units": CRUNCH_MAX_UNITS})
            sent = headers("tools/call", "crunch")
        else:
            opened = httpx.post(replica.url, json=LEGACY_INITIALIZE, timeout=10)
            sent = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
            body = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "crunch", "arguments": {"units": CRUNCH_MAX_UNITS}},
            }
        # How long the whole call takes here, its client staying.
        started = time.monotonic()
        assert httpx.post(replica.url, json=body, headers=sent, timeout=60).status_code == 200
        whole_s = time.monotonic() - started
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(replica.url, json=body, headers=sent, timeout=whole_s / 10)
        # The client is gone; the replica stops hashing within a slice or two.
        wait_for(lambda: health(replica.base_url)["in_flight"] == 0, timeout_s=whole_s)
        assert time.monotonic() - started < whole_s / 2
    finally:
        replica.stop()

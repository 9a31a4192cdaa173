"""The load test's legacy client: what it counts when a replica is replaced under a user."""

from __future__ import annotations

import random

import httpx
import pytest

from loadtest.users.flows import CallRecord
from loadtest.users.http_interface import HttpxLegacy
from loadtest.users.legacy_flow import SessionHolder, run_legacy_flow
from loadtest.users.simulated_user import ThinkTime
from server.harness.process import ServerProcess

pytestmark = pytest.mark.integration


def call(http: HttpxLegacy, holder: SessionHolder, rng: random.Random) -> CallRecord:
    return run_legacy_flow(
        http,
        holder,
        "get_weather",
        {"location": "Lisbon"},
        arch="sticky",
        think=ThinkTime(0, 0, rng),
        rng=rng,
        sleep=lambda s: None,
    )


def test_a_call_on_a_session_its_replica_lost_goes_out_on_a_new_one_without_a_restart() -> None:
    rng = random.Random(1)
    replica = ServerProcess()
    replica.start()
    try:
        with httpx.Client(timeout=10) as client:
            http, holder = HttpxLegacy(client, replica.url), SessionHolder()
            assert call(http, holder, rng).outcome == "completed"
            assert holder.session is not None
            old = holder.session.session_id
            # A rolling upgrade replaces the replica: its successor knows no old session.
            replica.stop()
            replica = ServerProcess(port=replica.port)
            replica.start()
            record = call(http, holder, rng)
    finally:
        replica.stop()
    assert record.outcome == "completed"
    assert (record.retries, record.re_prompts) == (0, 0)
    assert holder.session is not None and holder.session.session_id != old

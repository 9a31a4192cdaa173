"""The soak benchmark runs end to end: idle sockets stay open and every call is served."""

from __future__ import annotations

import pytest

from loadtest.soak.run import run_soak

pytestmark = pytest.mark.integration


def test_calls_are_served_beside_idle_sockets() -> None:
    report = run_soak(idle=50, clients=2, duration_s=1.0)
    figures = report.as_dict()
    assert figures["completed"] > 0
    assert figures["failed"] == 0, figures["errors"]
    assert figures["idle_sockets"] == 50


def test_one_principal_holds_no_more_legacy_calls_than_its_limit() -> None:
    report = run_soak(idle=10, clients=1, duration_s=0.5, held_attempts=12, held_limit=4)
    held = report.as_dict()["held"]
    assert (held["held"], held["refused"]) == (4, 8)
    assert held["other_principal_held"]  # the limit is per principal
    assert held["waiting_memory_bytes"] > 0

"""The soak benchmark runs end to end: idle sockets stay open and every call is served."""

from __future__ import annotations

from loadtest.soak import run_soak


def test_calls_are_served_beside_idle_sockets() -> None:
    report = run_soak(idle=50, clients=2, duration_s=1.0)
    figures = report.as_dict()
    assert figures["completed"] > 0
    assert figures["failed"] == 0, figures["errors"]
    assert figures["idle_sockets"] == 50

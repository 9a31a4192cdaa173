"""The calibration's machinery: its fits on known data, and a short live run of its shape.

Accuracy is not asserted here: the command measures it (`python -m loadtest calibrate`),
on a machine quiet enough for the figures to mean something.
"""

from __future__ import annotations

import numpy as np
import pytest

from loadtest.calibrate import restart_s, run_calibration
from loadtest.calibration_model import LiveInputs, network_delay, predict_level
from loadtest.haproxy import HAProxy
from loadtest.replica_cpu import CpuStretch, fit_cpu_per_round

INPUTS = LiveInputs(
    round_cpu_s=0.005,
    network_s=0.002,
    network_cv=0.5,
    think_median_s=0.2,
    think_sigma=0.5,
    held_call_bytes=40_000,
    max_restarts=8,
)


def test_the_network_delay_is_recovered_from_two_round_sums() -> None:
    # Per-round delay: lognormal, mean 2 ms, cv 0.6; a call sees the sum of two.
    sigma = np.sqrt(np.log1p(0.6**2))
    mu = np.log(0.002) - sigma**2 / 2
    sums = np.random.default_rng(7).lognormal(mu, sigma, (4000, 2)).sum(axis=1)
    mean, cv = network_delay(list(sums))
    assert mean == pytest.approx(0.002, rel=0.1)
    assert cv == pytest.approx(0.6, rel=0.2)


def test_a_spoiled_cpu_fit_falls_back_to_the_plain_ratio() -> None:
    # A starved replica served fewer rounds at higher loads: least squares would call the
    # replica's CPU idle work; the fit must give the plain ratio instead.
    stretches = [
        CpuStretch(cpu_s=3.31, span_s=9.9, rounds=350),
        CpuStretch(cpu_s=4.08, span_s=13.2, rounds=268),
        CpuStretch(cpu_s=4.38, span_s=13.9, rounds=248),
    ]
    per_round, idle = fit_cpu_per_round(stretches)
    assert per_round == pytest.approx(11.77 / 866) and idle == 0.0


def test_restart_time_is_read_from_the_upgrade_events() -> None:
    events = [
        {"t": 4.0, "event": "drain"},
        {"t": 5.0, "event": "stop"},
        {"t": 6.5, "event": "ready"},
        {"t": 7.0, "event": "stop"},
        {"t": 9.5, "event": "ready"},
    ]
    assert restart_s(events) == pytest.approx(2.0)


def test_the_simulated_level_is_busy_as_offered_rate_times_service() -> None:
    predicted = predict_level(INPUTS, "mrtr", 60.0)
    # 60 calls/s, two rounds of 5 ms each: the replica is busy 60% of the time.
    assert predicted["utilization"] == pytest.approx(0.6, abs=0.05)
    assert predicted["throughput_per_s"] == pytest.approx(60.0, rel=0.05)
    assert predicted["p95_ms"] > predicted["p50_ms"] > 2 * 5.0
    assert predicted["held_memory_bytes"] == 0.0  # MRTR holds nothing between rounds


@pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")
def test_a_short_sticky_calibration_reports_the_agreed_shape() -> None:
    report = run_calibration(
        "sticky", duration_s=6, probe_s=6, upgrade_s=8, utilizations=(0.1, 0.2, 0.3), held_calls=20
    )
    assert [round(row["target_utilization"], 1) for row in report["levels"]] == [0.1, 0.2, 0.3]
    for row in report["levels"]:
        assert 0 < row["utilization"] < 1.5
        for key in ("throughput", "p50_ms", "p95_ms", "held_memory_bytes"):
            assert set(row[key]) == {"measured", "predicted"}, key
        assert row["throughput"]["measured"] > 0 and row["throughput"]["predicted"] > 0
        assert row["live"]["completed"] > 0
    held = report["held_call_bytes"]
    assert held["measured"] > 0 and held["object_graph"] > 1000  # RSS: too few calls to compare
    assert held["simulated"] > 0
    upgrade = report["upgrade"]
    for key in ("lost", "re_prompts"):
        assert set(upgrade[key]) == {"measured", "predicted"}
    assert upgrade["restart_s"] > 0

"""The calibration's machinery: its fits on known data, and a short live run of its shape.

Accuracy is not asserted here: the command measures it (`python -m loadtest calibrate`),
on a machine quiet enough for the figures to mean something.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from loadtest.calibration import levels
from loadtest.calibration.calibrate import SPREAD_MIN_ROUNDS, run_calibration
from loadtest.calibration.disturbance import median_probe, probe_disturbances
from loadtest.calibration.levels import level_row
from loadtest.calibration.model import LiveInputs, delay_outside, network_delay, predict_level
from loadtest.calibration.table import markdown_levels, markdown_upgrades
from loadtest.harness.haproxy import HAProxy
from loadtest.harness.upgrade import restart_s
from loadtest.probes.replica_cpu import CpuStretch, busy_per_round, fit_cpu_per_round
from loadtest.probes.service_spread import Stretch, sample_stretches, spread_of

INPUTS = LiveInputs(
    round_cpu_s=0.005,
    round_cpu_cv=0.3,
    network_s=0.002,
    network_cv=0.5,
    think_time_median_s=0.2,
    think_time_sigma=0.5,
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


def test_the_delay_outside_is_what_calls_took_beyond_their_rounds_service() -> None:
    # Calls of two 10 ms rounds plus two lognormal delays of mean 1 ms (cv 0.5).
    sigma = np.sqrt(np.log1p(0.5**2))
    delays = np.random.default_rng(3).lognormal(np.log(0.001) - sigma**2 / 2, sigma, (2000, 2))
    latencies_ms = list((0.020 + delays.sum(axis=1)) * 1e3)
    mean, _ = delay_outside(latencies_ms, round_service_s=0.010)
    assert mean == pytest.approx(0.001, rel=0.1)
    # Subtracting a busy time that holds background work (11 ms) leaves most calls below
    # zero: the few left are the tail, and the delay comes out wrong.
    assert delay_outside(latencies_ms, round_service_s=0.011)[0] != pytest.approx(0.001, rel=0.2)


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


@pytest.mark.slow
def test_the_simulated_level_is_busy_as_offered_rate_times_service() -> None:
    predicted = predict_level(INPUTS, "mrtr", 60.0)
    # 60 calls/s, two rounds of 5 ms each: the replica is busy 60% of the time.
    assert predicted["utilization"] == pytest.approx(0.6, abs=0.05)
    assert predicted["throughput_per_s"] == pytest.approx(60.0, rel=0.05)
    assert predicted["p95_ms"] > predicted["p50_ms"] > 2 * 5.0
    assert predicted["held_memory_bytes"] == 0.0  # MRTR holds nothing between rounds


def test_the_service_spread_counts_single_rounds_only() -> None:
    # Rounds of 8 ms of CPU, busy 8 or 12 ms (mean 10, sample std 2.11), among health
    # checks of under a millisecond and two rounds merged into one stretch.
    rounds = [Stretch(0.008, 0.008), Stretch(0.012, 0.008)] * 5
    background = [Stretch(0.0004, 0.0004), Stretch(0.0011, 0.0009)]
    merged = [Stretch(0.019, 0.016)]
    spread = spread_of(rounds + background + merged, round_cpu_s=0.008)
    assert (spread.rounds, spread.merged) == (10, 1)
    assert spread.mean_s == pytest.approx(0.010)
    assert spread.cv == pytest.approx(statistics.stdev([8, 12] * 5) / 10)


# A process whose main thread works for 15 or 25 ms of wall time (spinning: on a CPU or
# waiting for one), then sleeps 15 ms, in turn.
BUSY_THEN_ASLEEP = """
import time
for i in range(40):
    end = time.perf_counter() + (0.015 if i % 2 else 0.025)
    while time.perf_counter() < end:
        pass
    time.sleep(0.015)
"""


def test_runnable_stretches_of_a_live_thread_are_timed() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY_THEN_ASLEEP])
    stop = threading.Event()
    found: list[list[Stretch]] = []
    reader = threading.Thread(target=lambda: found.append(sample_stretches(child.pid, stop)))
    try:
        reader.start()
        child.wait(10)
    finally:
        stop.set()
        reader.join(5)
        child.kill()
        child.wait(5)
    # (The interpreter's own start adds a stretch or two: quartiles, not extremes.)
    long = [s for s in found[0] if s.busy_s >= 0.010]
    assert len(long) >= 20
    assert all(s.cpu_s <= s.busy_s * 1.01 for s in found[0])
    quartiles = np.quantile([s.busy_s for s in long], [0.25, 0.75])
    assert quartiles == pytest.approx([0.015, 0.025], abs=0.002)


@pytest.mark.slow
def test_a_wider_service_spread_lengthens_the_simulated_tail() -> None:
    # At 80% of the replica, queueing grows with the service time's spread (Pollaczek-
    # Khinchine: the mean wait is proportional to 1 + cv^2).
    narrow = predict_level(replace(INPUTS, round_cpu_cv=0.1), "mrtr", 80.0)
    wide = predict_level(replace(INPUTS, round_cpu_cv=1.0), "mrtr", 80.0)
    assert wide["p95_ms"] > 1.2 * narrow["p95_ms"]
    assert wide["throughput_per_s"] == pytest.approx(narrow["throughput_per_s"], rel=0.05)


_TWINS: dict[tuple[Any, ...], dict[str, float]] = {}


@pytest.fixture
def twins_simulated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A level's twin is a pure function of its inputs (seeded simulations): the judgment
    tests below give the same few runs to many levels, so each twin is simulated once for
    the module and every level reads it."""

    def predict_once(inputs: LiveInputs, arch: str, rate_per_s: float, **kw: Any) -> dict:
        key = (inputs, arch, rate_per_s, tuple(sorted(kw.items())))
        if key not in _TWINS:
            _TWINS[key] = predict_level(inputs, arch, rate_per_s, **kw)
        return dict(_TWINS[key])

    monkeypatch.setattr(levels, "predict_level", predict_once)


def _run(p95_ms: float, service_s: float, wait_s: float = 0.15) -> dict:
    cpu = {"cpu_s": 3.0, "span_s": 10.0, "rounds": 600, "wait_s": wait_s}
    return {
        "offered_per_s": 30.0,
        "throughput_per_s": 30.0,
        "p50_ms": 20.0,
        "p95_ms": p95_ms,
        "utilization": 0.4,
        "cpu_utilization": 0.3,
        "service_s": service_s + 0.001,
        "round_service_s": service_s,
        "mean_waiting_calls": 2.0,
        "users": 60,
        "completed": 300,
        "not_completed": 0,
        "cpu": cpu,
        "errors": 0,
    }


@pytest.mark.slow
def test_a_level_is_judged_by_the_medians_of_its_runs(twins_simulated_once: None) -> None:
    runs = [_run(40.0, 0.005), _run(120.0, 0.005), _run(50.0, 0.006)]
    row = level_row(0.5, runs, INPUTS, "sticky", background_per_s=0.03, simulated_calls=3_000)
    p95 = row["p95_ms"]
    assert p95["measured"] == 50.0 and p95["spread"] == [40.0, 120.0]
    assert p95["measured_runs"] == [40.0, 120.0, 50.0] and len(p95["predicted_runs"]) == 3
    assert p95["predicted"] == statistics.median(p95["predicted_runs"])
    assert row["ratio"]["p95_ms"] == pytest.approx(p95["predicted"] / 50.0)
    # The run with the slower replica has the slower twin.
    assert p95["predicted_runs"][2] > p95["predicted_runs"][0]
    assert row["held_memory_bytes"]["measured"] == 2.0 * INPUTS.held_call_bytes
    assert row["cpu_wait_share"] == pytest.approx(0.15 / 3.15)
    assert row["disturbed"] == [] and row["runs_judged"] == 3
    # The twins serve each run's own rounds; the background work joins their busy share.
    assert row["service_ms"] == pytest.approx(5.0)
    twins = statistics.median(row["utilization_predicted_runs"])
    assert row["utilization_predicted"] == pytest.approx(twins + 0.03)


@pytest.mark.slow
def test_a_run_that_met_a_busy_machine_is_left_out_and_flagged(twins_simulated_once: None) -> None:
    # The second run's replica waited for a CPU 40% of its busy time.
    runs = [_run(40.0, 0.005), _run(120.0, 0.005, wait_s=2.0), _run(50.0, 0.006)]
    row = level_row(0.5, runs, INPUTS, "mrtr", simulated_calls=2_000)
    assert row["p95_ms"]["measured_runs"] == [40.0, 50.0] and row["runs_judged"] == 2
    assert len(row["disturbed"]) == 1 and "waited for a CPU 40%" in row["disturbed"][0]
    assert row["ratio"]["p95_ms"] is not None
    # A quarter of its busy time: a burst where the other runs waited 5%, not where they
    # waited 20% (the twin takes a steady wait into its service time).
    runs = [_run(40.0, 0.005), _run(120.0, 0.005, wait_s=1.0), _run(50.0, 0.006)]
    burst = level_row(0.5, runs, INPUTS, "mrtr", simulated_calls=2_000, typical_wait_share=0.05)
    assert burst["runs_judged"] == 2 and "2x the other runs' 5%" in burst["disturbed"][0]
    steady = level_row(0.5, runs, INPUTS, "mrtr", simulated_calls=2_000, typical_wait_share=0.2)
    assert steady["runs_judged"] == 3 and steady["disturbed"] == []
    # Two of three disturbed: the level is flagged, its ratios not reported.
    runs = [_run(40.0, 0.005, wait_s=2.0), _run(120.0, 0.005, wait_s=2.0), _run(50.0, 0.006)]
    row = level_row(0.5, runs, INPUTS, "mrtr", simulated_calls=2_000)
    assert row["ratio"] == {"throughput": None, "p50_ms": None, "p95_ms": None}
    assert "not reported" in row["disturbed"][-1]
    assert (
        "| disturbed, disturbed, disturbed |"
        in markdown_levels([{"arch": "mrtr", "levels": [row]}])[-1]
    )


def test_a_probe_far_from_the_others_is_disturbed_and_the_median_taken() -> None:
    delays = [0.0007, 0.0021, 0.0008]
    reasons = probe_disturbances(delays)
    assert reasons[0] is None and reasons[2] is None and "1.5x" in (reasons[1] or "")
    assert median_probe(delays, reasons) == 0  # of the undisturbed 0.7 and 0.8 ms: the lower
    assert probe_disturbances([0.0007, 0.0009, 0.0008]) == [None, None, None]


def test_a_rounds_service_leaves_the_background_work_out() -> None:
    # 10 s of a replica busy 2.5 s (CPU and wait) over 200 rounds, with 0.05 s/s background.
    stretch = CpuStretch(cpu_s=2.0, span_s=10.0, rounds=200, wait_s=0.5)
    assert busy_per_round(stretch, 0.05) == pytest.approx((2.5 - 0.5) / 200)
    assert busy_per_round(stretch, 0.0) == pytest.approx(2.5 / 200)
    assert busy_per_round(CpuStretch(cpu_s=0.1, span_s=10.0, rounds=0), 0.05) == 0.0


@pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")
@pytest.mark.integration
def test_a_short_sticky_calibration_reports_the_agreed_shape() -> None:
    report = run_calibration(
        "sticky",
        duration_s=6,  # a 2 s window after the 3 s warm-up and before the last second
        probe_s=5,  # a 1 s window: some 40 calls for the fit
        spread_s=12,  # on a quiet machine 1 round in 7 is timed alone: 80 or so, over the minimum
        upgrade_s=8,
        utilizations=(0.3,),  # one level shows a row's whole shape; more only repeat it
        repeats=2,
        held_calls=20,
        simulated_calls=2_000,  # the report's shape, not a steady p95
    )
    assert [round(row["target_utilization"], 1) for row in report["levels"]] == [0.3]
    assert report["inputs"]["service_cv"] > 0
    assert report["inputs"]["service_cv_rounds"] >= SPREAD_MIN_ROUNDS
    for row in report["levels"]:
        assert 0 < row["utilization"] < 1.5
        for key in ("throughput", "p50_ms", "p95_ms", "held_memory_bytes"):
            assert {"measured", "predicted"} <= set(row[key]), key
            assert len(row[key]["measured_runs"]) == 2 == len(row[key]["predicted_runs"])
            low, high = row[key]["spread"]
            assert low <= row[key]["measured"] <= high
        assert row["throughput"]["measured"] > 0 and row["throughput"]["predicted"] > 0
        assert all(run["completed"] > 0 for run in row["live"])
    held = report["held_call_bytes"]
    assert held["measured"] > 0 and held["object_graph"] > 1000  # RSS: too few calls to compare
    assert held["simulated"] > 0
    upgrade = report["upgrade"]
    for key in ("lost", "re_prompts", "restarts", "calls"):
        assert set(upgrade[key]) == {"measured", "predicted", "measured_runs"}
        assert len(upgrade[key]["measured_runs"]) == upgrade["repeats"] == 2
    assert min(upgrade["calls"]["measured_runs"]) > 0
    assert upgrade["restart_s"] > 0
    # The stored report renders as the README's tables: one row per level, one upgrade row.
    levels = markdown_levels([report])
    assert len(levels) == 2 + 1 and all(line.startswith("| `sticky` |") for line in levels[2:])
    upgrades = markdown_upgrades([report])
    assert len(upgrades) == 3 and upgrades[2].startswith("| `sticky` |")


@pytest.mark.slow
def test_a_disturbed_service_spread_leaves_no_level_reported(twins_simulated_once: None) -> None:
    from loadtest.calibration.calibrate import Fit, _disturbed

    runs = [_run(40.0, 0.005), _run(50.0, 0.005), _run(45.0, 0.006)]
    fit = Fit(0.008, 0.01, 0.001, 0.001, 0.5, probes=[{"disturbed": None}])

    def rows() -> list[dict]:
        return [level_row(0.5, runs, INPUTS, "mrtr", simulated_calls=2_000)]

    quiet = rows()
    assert _disturbed(fit, quiet, spread_wait=0.06, typical=0.05) == []
    assert quiet[0]["ratio"]["p95_ms"] is not None
    # The spread's run waited 29%, the levels' 4%: under 30%, but a burst all the same.
    levels = rows()
    flags = _disturbed(fit, levels, spread_wait=0.29, typical=0.04)
    assert "service spread" in flags[0]
    assert levels[0]["ratio"] == {"throughput": None, "p50_ms": None, "p95_ms": None}


def test_a_calibration_says_what_it_will_run_before_its_first_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from loadtest.calibration import calibrate

    said: list[str] = []

    def first_run(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("the first live run")

    monkeypatch.setattr(calibrate, "run_level", first_run)
    with pytest.raises(RuntimeError, match="the first live run"):
        run_calibration(
            "sticky", duration_s=30, probe_s=15, upgrade_s=16, repeats=3, progress=said.append
        )
    # 3 probes, a spread run, 3 levels x 3, 3 upgrades: 16 runs; 45 + 15 + 270 + 48 s of load.
    assert said[0].startswith("calibrate sticky: 16 live runs (3 probes of 15 s")
    assert "6.3 min of load" in said[0] and "held calls" in said[0]
    assert said[1].startswith("probe 1/3")

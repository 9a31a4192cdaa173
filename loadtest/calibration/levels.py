"""One calibration level over its repeated runs: each run beside its simulated twin, and
the medians that judge it.

One run's p95 at a high load rests on a few dozen calls, and a burst of other work on a
shared machine moves it by a third; the median of a few runs does not move with one
disturbed run. Each live run is simulated with what that run measured (its offered rate
and the replica's mean service time in it), so a run that met a slower machine is
compared with a twin that met the same; the level's verdict is the ratio of the medians.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

from loadtest.calibration.disturbance import MIN_QUIET_RUNS, run_disturbance
from loadtest.calibration.model import CALLS_PER_LEVEL, LiveInputs, predict_level

#: The figures compared, as (name in a run, name in the report).
FIGURES = (("throughput_per_s", "throughput"), ("p50_ms", "p50_ms"), ("p95_ms", "p95_ms"))


def figure(measured: list[float], predicted: list[float]) -> dict[str, Any]:
    """One figure of a level: medians (live and simulated), every run, and the live spread."""
    return {
        "measured": statistics.median(measured),
        "predicted": statistics.median(predicted),
        "measured_runs": measured,
        "predicted_runs": predicted,
        "spread": [min(measured), max(measured)],
    }


def ratio(row: dict[str, Any], name: str) -> float:
    """Simulated over live, of the medians."""
    measured = row[name]["measured"]
    return row[name]["predicted"] / measured if measured else float("nan")


def level_row(
    target: float,
    runs: list[dict[str, Any]],
    inputs: LiveInputs,
    arch: str,
    *,
    background_per_s: float = 0.0,
    simulated_calls: int = CALLS_PER_LEVEL,
    typical_wait_share: float | None = None,
) -> dict[str, Any]:
    """The report's row for one level: live runs (`calibration_run.run_level`, each with its
    `round_service_s`) and their twins, each simulating about `simulated_calls` calls. The
    twin serves rounds only: the replica's background work, `background_per_s` of its time,
    is added to the twin's busy share.

    A run that met a busy machine (`loadtest/calibration/disturbance.py`, against the
    calibration's `typical_wait_share`) is left out of the medians; with fewer than
    `MIN_QUIET_RUNS` runs left the level is `disturbed` and its ratios are not reported
    (None)."""
    reasons = [run_disturbance(run, typical_wait_share) for run in runs]
    disturbed = [f"run {i + 1}: {why}" for i, why in enumerate(reasons) if why]
    quiet = [run for run, why in zip(runs, reasons, strict=True) if why is None]
    reported = len(quiet) >= MIN_QUIET_RUNS
    if reported:
        runs = quiet
    else:
        disturbed.append(f"{len(quiet)} undisturbed run(s): the level is not reported")
    predicted = [
        predict_level(
            replace(inputs, round_cpu_s=run["round_service_s"]),
            arch,
            run["offered_per_s"],
            calls=simulated_calls,
        )
        for run in runs
    ]

    def median(key: str) -> float:
        return statistics.median(run[key] for run in runs)

    row: dict[str, Any] = {
        "target_utilization": target,
        "utilization": median("utilization"),
        "utilization_runs": [run["utilization"] for run in runs],
        "utilization_predicted": statistics.median(p["utilization"] for p in predicted)
        + background_per_s,
        "utilization_predicted_runs": [p["utilization"] for p in predicted],
        "background_per_s": background_per_s,
        "cpu_utilization": median("cpu_utilization"),
        # The share of the replica's busy time it spent waiting for a CPU other programs held.
        "cpu_wait_share": statistics.median(
            run["cpu"]["wait_s"] / (run["cpu"]["cpu_s"] + run["cpu"]["wait_s"])
            if run["cpu"]["cpu_s"] + run["cpu"]["wait_s"] > 0
            else float("nan")
            for run in runs
        ),
        # A round's own service time, as the twins got it.
        "service_ms": median("round_service_s") * 1e3,
        "offered_per_s": median("offered_per_s"),
    }
    for key, name in FIGURES:
        row[name] = figure([run[key] for run in runs], [p[key] for p in predicted])
    if arch != "mrtr":
        row["held_memory_bytes"] = figure(
            [run["mean_waiting_calls"] * inputs.held_call_bytes for run in runs],
            [p["held_memory_bytes"] for p in predicted],
        )
    row["ratio"] = {name: ratio(row, name) if reported else None for _, name in FIGURES}
    row["disturbed"] = disturbed
    row["runs_judged"] = len(runs) if reported else 0
    row["live"] = [
        {
            k: run[k]
            for k in (
                "users",
                "completed",
                "not_completed",
                "cpu",
                "errors",
                "offered_per_s",
                "round_service_s",
            )
        }
        for run in runs
    ]
    return row

"""Calibration: measure the live cluster, feed the numbers to `labsim`, compare predictions.

The simulation is worth trusting only if, given parameters measured on the real system,
it predicts that system. Here:

1. An MRTR cluster (one replica and HAProxy pinned to CPU 0, Locust pinned to CPU 1) is
   driven at three load levels by users whose calls start at exponential intervals, so
   together they offer a known Poisson load of `users / pacing_s` calls per second, half
   `get_weather` (one question, two rounds), half `crunch` of zero units (one round).
2. The replica's CPU time (from /proc), fitted against rounds served and time across the
   levels, gives the service time per round; what is left of a one-round call's latency
   (median and 95th percentile, all levels) is the network, HAProxy and the client, as a
   lognormal delay.
3. `labsim` gets those two numbers, the same tool mix, think time and offered load, and
   predicts throughput and p50/p95 latency at all three levels.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any

from labsim import simulate
from labsim.params import ServiceTime, SimParams
from loadtest.config import LoadTestConfig
from loadtest.replica_cpu import CpuStretch, cpu_seconds, fit_cpu_per_round
from loadtest.scenarios import run_scenario

#: Calls per second offered at each level (a small share of one core's capacity first).
DEFAULT_LEVELS = (20.0, 80.0, 160.0)
#: Seconds between a user's calls; users = rate x pacing.
PACING_S = 1.0
THINK_MEDIAN_S = 0.02
#: Seconds at the start of each level left out of the measurement (warm-up removal).
WARMUP_S = 2.0
THINK_SIGMA = 0.3


def measure_level(rate_per_s: float, duration_s: float) -> dict[str, Any]:
    """One load level on the live cluster: throughput, latency, CPU per round."""
    config = LoadTestConfig(
        arch="mrtr",
        scenario="steady",
        replicas=1,
        users=max(1, round(rate_per_s * PACING_S)),
        spawn_rate=max(1.0, rate_per_s * PACING_S),
        duration_s=duration_s,
        pacing_s=PACING_S,
        think_time_median_s=THINK_MEDIAN_S,
        think_time_sigma=THINK_SIGMA,
        tool_mix={"get_weather": 1.0, "crunch": 1.0},
        crunch_units=0,
        pin_cores=True,
    )
    cpu: dict[str, float] = {}

    def sample_cpu(cluster: Any, moment: str) -> None:
        cpu[moment] = sum(cpu_seconds(r.pid) for r in cluster.replicas.values() if r.pid)
        cpu[f"{moment}_at"] = time.monotonic()

    summary = run_scenario(config, progress=lambda line: None, on_cluster=sample_cpu)
    done = [c for c in summary["calls"] if c["outcome"] == "completed"]
    rounds = sum(c["rounds"] for c in done)
    # Steady window (warm-up removed): skip the first WARMUP_S, while users spawn and open
    # their connections, and the last second, while the swarm stops.
    first = min((c["started"] for c in done), default=0.0)
    start, stop = first + WARMUP_S, first + duration_s - 1.0
    calls = [c for c in done if start <= c["started"] and c["ended"] <= stop]
    span = max(stop - start, 1e-9)
    latencies = [c["latency_ms"] for c in calls]
    one_round = [c["latency_ms"] for c in calls if c["rounds"] == 1]
    return {
        "offered_per_s": rate_per_s,
        "users": config.users,
        "completed": len(calls),
        "failed": summary["failed"] + summary["lost"],
        "throughput_per_s": len(calls) / span,
        "p50_ms": _quantile(latencies, 0.50),
        "p95_ms": _quantile(latencies, 0.95),
        "rounds": rounds,
        "rounds_per_call": rounds / max(len(calls), 1),
        # Single-round calls (crunch of nothing): one request's latency, end to end.
        "one_round_ms": one_round,
        # For the fit of CPU against rounds and time: every round of the run counts here.
        "replica_cpu_s": cpu["after"] - cpu["before"],
        "replica_cpu_span_s": cpu["after_at"] - cpu["before_at"],
        "rounds_served": sum(c["rounds"] for c in summary["calls"]),
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def service_time(levels: list[dict[str, Any]]) -> tuple[float, float]:
    """CPU seconds per round, and background CPU per second, fitted over the levels."""
    return fit_cpu_per_round(
        [
            CpuStretch(lv["replica_cpu_s"], lv["replica_cpu_span_s"], lv["rounds_served"])
            for lv in levels
        ]
    )


def network_delay(median_s: float, p95_s: float) -> tuple[float, float]:
    """Mean and spread (cv) of a lognormal with this median and 95th percentile."""
    median_s = max(median_s, 1e-6)
    sigma = max(math.log(max(p95_s, median_s) / median_s), 0.0) / 1.6449
    return median_s * math.exp(sigma**2 / 2), math.sqrt(math.expm1(sigma**2))


def predict(
    rate_per_s: float,
    service_s: float,
    network_s: float,
    network_cv: float = 0.0,
    *,
    seed: int = 1,
) -> dict[str, float]:
    """labsim's prediction for one level, from the measured service and network times."""
    params = SimParams().with_overrides(
        replicas=1,
        workers_per_replica=1,
        arrival_rate_per_s=rate_per_s,
        tool_mix=(0.5, 0.5, 0.0),
        round_cpu=ServiceTime(mean_s=service_s, kind="lognormal", cv=0.5),
        request_overhead_s=0.0,
        network_rtt_s=network_s,
        network_rtt_cv=network_cv,
        think_median_s=THINK_MEDIAN_S,
        think_sigma=THINK_SIGMA,
        never_answer_fraction=0.0,
        horizon_s=max(60.0, 6000 / rate_per_s),
        warmup_s=5.0,
    )
    summary = simulate(params, "mrtr", seed=seed).summary
    return {
        "throughput_per_s": summary["goodput_per_s"],
        "p50_ms": summary["p50_latency_s"] * 1e3,
        "p95_ms": summary["p95_latency_s"] * 1e3,
    }


def run_calibration(
    levels: tuple[float, ...] = DEFAULT_LEVELS, *, duration_s: float = 12.0
) -> dict[str, Any]:
    """Measure every level, calibrate on the first, predict all; ratios predicted/measured."""
    measured = []
    for rate in levels:
        print(f"measuring {rate:g} calls/s for {duration_s:g} s ...", file=sys.stderr, flush=True)
        measured.append(measure_level(rate, duration_s))
    service_s, idle_cpu = service_time(measured)
    # One-round calls of every level (queueing is slight at these loads): more samples,
    # a steadier tail than the lowest level alone gives.
    one_round = [ms for lv in measured for ms in lv.pop("one_round_ms")]
    network_s, network_cv = network_delay(
        _quantile(one_round, 0.50) / 1e3 - service_s, _quantile(one_round, 0.95) / 1e3 - service_s
    )
    rows = []
    for level in measured:
        predicted = predict(level["offered_per_s"], service_s, network_s, network_cv)
        rows.append(
            {
                "offered_per_s": level["offered_per_s"],
                "measured": level,
                "predicted": predicted,
                "ratio": {
                    key: predicted[key] / level[key] if level[key] else float("nan")
                    for key in ("throughput_per_s", "p50_ms", "p95_ms")
                },
            }
        )
    return {
        "calibrated": {
            "service_ms": service_s * 1e3,
            "network_ms": network_s * 1e3,
            "network_cv": network_cv,
            "idle_cpu_per_s": idle_cpu,
        },
        "levels": rows,
        "machine": {"cpus": os.cpu_count()},
        "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def print_calibration(report: dict[str, Any]) -> None:
    c = report["calibrated"]
    print(
        f"calibrated: service {c['service_ms']:.3f} ms per round (replica CPU, fitted); "
        f"network + LB + client {c['network_ms']:.3f} ms per round "
        f"(mean, lognormal cv {c['network_cv']:.2f})"
    )
    print(
        f"{'offered/s':>9}  {'measured/s':>10} {'predicted/s':>11} {'ratio':>6}   "
        f"{'p50 meas':>8} {'p50 pred':>8} {'ratio':>6}   {'p95 meas':>8} {'p95 pred':>8} "
        f"{'ratio':>6}"
    )
    for row in report["levels"]:
        m, p, r = row["measured"], row["predicted"], row["ratio"]
        print(
            f"{row['offered_per_s']:>9.0f}  {m['throughput_per_s']:>10.1f} "
            f"{p['throughput_per_s']:>11.1f} {r['throughput_per_s']:>6.2f}   "
            f"{m['p50_ms']:>8.2f} {p['p50_ms']:>8.2f} {r['p50_ms']:>6.2f}   "
            f"{m['p95_ms']:>8.2f} {p['p95_ms']:>8.2f} {r['p95_ms']:>6.2f}"
        )

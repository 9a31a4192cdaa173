"""Calibration: the live cluster and its simulated twin at the same loads, side by side.

    python -m loadtest calibrate --arch mrtr|sticky|sse-store [--json F]

The simulation is worth trusting only if, given parameters measured on the real system,
it predicts that system. For one architecture:

1. A probe: one replica (pinned to CPU 0 with HAProxy; Locust on CPU 1) at a light load
   of `quote` calls that spend no CPU of their own, so that a call's latency is nearly
   all delay outside the replica: beyond the replica's own busy time per round, it
   gives the per-round delay of client, balancer and wire (a lognormal).
   Then the spread of the replica's service time per round, timed round by round on
   the replica's thread while one user calls (`loadtest/probes/service_spread.py`); its busy
   time per round sets the three load levels.
2. Three open-loop levels at about 25%, 50% and 77% of the replica's time, each run
   `repeats` times, interleaved: users start `quote` calls (one question, two rounds,
   `QUOTE_CPU_MS` of CPU per round, so that one Locust process can load a replica) at
   exponential intervals and think for a lognormal time before answering
   (`loadtest/calibration/run.py`). Measured: throughput, p50 and p95 of a call's
   latency without think time, the replica's busy time (from /proc) in the steady
   window, and for the legacy architectures the calls waiting at each moment.
3. The replica's busy time is its CPU time plus the time it waited for a CPU held by
   other programs (on a quiet machine nearly nothing; on a shared one, the difference
   between a fast and a slow replica). Its background work (health checks, timers) is
   fitted over all runs, as CPU per second beside CPU per round, and left out of a
   round's service time. labsim gets each run's service time per round with the
   measured spread, the network delay, the rate the run offered and the think time
   (`loadtest/calibration/model.py`) and predicts every figure; a level's figures are
   the medians over its runs (`loadtest/calibration/levels.py`).
4. Legacy architectures: the memory a held call adds (live, `loadtest/probes/held_memory.py`)
   beside the value labsim's defaults use.
5. A rolling upgrade of two replicas with the same drain timeout and think time, live
   and simulated: lost calls and re-prompts (MRTR: none in both;
   `loadtest/calibration/rolling_upgrade.py`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import Any

from labsim.model.params import SimParams
from loadtest.calibration.disturbance import (
    DISTURBED_WAIT_SHARE,
    OUTLIER_FACTOR,
    OUTLIER_FLOOR,
    median_probe,
    probe_disturbances,
    typical_wait_share,
    wait_share,
)
from loadtest.calibration.levels import level_row
from loadtest.calibration.measure import measure_held
from loadtest.calibration.model import (
    CALLS_PER_LEVEL,
    LiveInputs,
    delay_outside,
)
from loadtest.calibration.rolling_upgrade import run_upgrade
from loadtest.calibration.run import (
    LEVEL_S,
    PACING_S,
    QUOTE_CPU_MS,
    THINK_MEDIAN_S,
    THINK_SIGMA,
    Progress,
    level_config,
    print_progress,
    run_level,
)
from loadtest.config import LoadTestConfig
from loadtest.probes.replica_cpu import CpuStretch, busy_per_round, fit_cpu_per_round
from loadtest.probes.service_spread import ServiceSpread, spread_of

#: Shares of the replica's time the three levels aim at. The top one is 0.77, not 0.85:
#: near saturation a p95 grows as 1 / (1 - utilisation), so at 0.85 the few points between
#: the level aimed at and the one reached on a shared core (0.85 vs 0.89) move it by a
#: third. Not 0.75 either: a replica's service per round falls as its load grows, so a
#: level aimed at 0.75 from the lower levels' service reached 0.69 under sticky routing,
#: below the 0.7 the top level must reach.
UTILIZATIONS = (0.25, 0.50, 0.77)
#: Each level is run this many times and judged by its median: three is the fewest with a
#: median that one disturbed run cannot move.
REPEATS = 3
#: The service-spread run's users answer after a short think (median s), so that one
#: user in a closed loop sends some hundreds of rounds, one at a time.
SPREAD_THINK_MEDIAN_S = 0.02
#: Fewest rounds timed for a service-time spread to be reported at all. On a quiet machine
#: most pauses between one call and the next go unseen, and only one round in seven or
#: so is timed alone (49-95 of about 640 in 15 s).
SPREAD_MIN_ROUNDS = 15
#: The probe's load: its calls spend no CPU in the tool (a round is then about 1 ms of the
#: replica's time, a tenth of a level's), so that a call's latency is nearly all delay
#: outside. The rate hardly matters to that delay (call p50 5.2-5.8 ms at 10, 40 and 120
#: calls/s, interleaved, on `mrtr`); 40 calls/s keeps the replica about 10% busy, where
#: a round waits a few hundredths of a ms for another, and gives some 450 calls in 15 s
#: for the fit (10 calls/s gave about 100, and the fitted cv swung 0.9-1.7 between runs).
PROBE_RATE_PER_S = 40.0
#: Legacy calls held at once to measure the memory of one.
HELD_CALLS = 100


def measure_service_spread(
    arch: str, duration_s: float, progress: Progress
) -> tuple[ServiceSpread, float]:
    """The spread of the replica's service time per round, from its runnable stretches
    while one user calls in a closed loop (`loadtest/probes/service_spread.py`), and the
    share of the replica's busy time in that run spent waiting for a CPU."""
    config = level_config(
        arch, 1.0, duration_s, pacing_s=0.0, think_time_median_s=SPREAD_THINK_MEDIAN_S
    )
    progress(f"service spread: one user in a closed loop for {duration_s:g} s")
    run = run_level(config, progress, time_rounds=True)
    # A round's CPU: what the run's counters gave per round (quote's and the request's).
    cpu = run["cpu"]
    spread = spread_of(run["stretches"], cpu["cpu_s"] / max(cpu["rounds"], 1))
    if spread.rounds < SPREAD_MIN_ROUNDS:
        raise RuntimeError(
            f"only {spread.rounds} rounds timed on the replica (of {cpu['rounds']} "
            f"served): too few for a service-time spread"
        )
    return replace(spread, busy_s=run["service_s"], served=cpu["rounds"]), wait_share(run)


@dataclass(frozen=True)
class Fit:
    """What the runs give when fitted together: a replica's CPU per round and its
    background CPU, the probe's own service per round, and the delay beyond it."""

    round_cpu_s: float
    idle_cpu_per_s: float
    probe_round_s: float
    network_s: float
    network_cv: float
    #: Each probe's delay, spread, wait for a CPU and disturbance; the one taken.
    probes: list[dict[str, Any]] = field(default_factory=list)
    chosen: int = 0


def run_calibration(
    arch: str = "mrtr",
    *,
    duration_s: float = LEVEL_S,
    probe_s: float = 15.0,
    upgrade_s: float = 16.0,
    utilizations: tuple[float, ...] = UTILIZATIONS,
    repeats: int = REPEATS,
    spread_s: float | None = None,
    held_calls: int = HELD_CALLS,
    simulated_calls: int = CALLS_PER_LEVEL,
    progress: Progress = print_progress,
) -> dict[str, Any]:
    """Probe, service spread, three levels `repeats` times, held memory and a rolling
    upgrade; live beside simulated (each run's twin simulates about `simulated_calls`
    calls). The service-spread run lasts `spread_s` (the probe's duration unless given)."""
    progress(
        _plan_line(arch, probe_s, spread_s or probe_s, utilizations, repeats, duration_s, upgrade_s)
    )
    probes = []
    for repeat in range(repeats):
        progress(
            f"probe {repeat + 1}/{repeats}: {PROBE_RATE_PER_S:g} calls/s of no CPU "
            f"for {probe_s:g} s"
        )
        config = level_config(arch, PROBE_RATE_PER_S, probe_s, tool_cpu_ms=0.0)
        probes.append(run_level(config, progress))
    spread, spread_wait = measure_service_spread(arch, spread_s or probe_s, progress)
    runs = run_levels(arch, spread.busy_s, utilizations, repeats, duration_s, progress)
    fit = fit_runs(probes, [run for level in runs for run in level])
    probe = probes[fit.chosen]
    held = measure_held(arch, held_calls, progress) if arch != "mrtr" else None
    inputs = LiveInputs(
        round_cpu_s=spread.busy_s,
        round_cpu_cv=spread.cv,
        network_s=fit.network_s,
        network_cv=fit.network_cv,
        think_time_median_s=THINK_MEDIAN_S,
        think_time_sigma=THINK_SIGMA,
        held_call_bytes=round(held["rss_bytes_per_call"]) if held else _simulated_held(),
        max_restarts=LoadTestConfig().max_retries,
    )
    typical = typical_wait_share([run for level in runs for run in level])
    levels = [
        level_row(
            target,
            level_runs,
            inputs,
            arch,
            background_per_s=fit.idle_cpu_per_s,
            simulated_calls=simulated_calls,
            typical_wait_share=typical,
        )
        for target, level_runs in zip(utilizations, runs, strict=True)
    ]
    report: dict[str, Any] = {
        "arch": arch,
        "calibrated": _calibrated(probe, fit),
        "probes": fit.probes,
        "disturbed": _disturbed(fit, levels, spread_wait, typical),
        "inputs": _spread_inputs(spread),
        "repeats": repeats,
        "duration_s": duration_s,
        "probe": {
            k: probe[k] for k in ("offered_per_s", "completed", "p50_ms", "p95_ms", "errors")
        },
        "levels": levels,
    }
    if held is not None:
        report["held_call_bytes"] = {
            "measured": held["rss_bytes_per_call"],
            "simulated": _simulated_held(),
            "object_graph": held["object_graph_bytes_per_call"],
        }
    if upgrade_s > 0:
        busy_per_call_s = 2 * max(spread.busy_s, 1e-6)  # quote: two rounds a call
        report["upgrade"] = run_upgrade(arch, inputs, busy_per_call_s, upgrade_s, progress, repeats)
    report["machine"] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()}
    report["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return report


def _plan_line(
    arch: str,
    probe_s: float,
    spread_s: float,
    utilizations: tuple[float, ...],
    repeats: int,
    duration_s: float,
    upgrade_s: float,
) -> str:
    """What a calibration is about to run, said before its first run: each kind of live
    run and how many, and the minutes of load they offer in all."""
    upgrades = repeats if upgrade_s > 0 else 0
    runs = repeats + 1 + len(utilizations) * repeats + upgrades
    load_s = repeats * probe_s + spread_s + len(utilizations) * repeats * duration_s
    load_s += upgrades * upgrade_s
    held = ", the held calls' memory" if arch != "mrtr" else ""
    return (
        f"calibrate {arch}: {runs} live runs ({repeats} probes of {probe_s:g} s, one "
        f"service-spread run of {spread_s:g} s, {len(utilizations)} levels x {repeats} of "
        f"{duration_s:g} s, {upgrades} rolling upgrades of {upgrade_s:g} s{held}): "
        f"{load_s / 60:.1f} min of load, besides starting and stopping each cluster"
    )


def run_levels(
    arch: str,
    busy_per_round_s: float,
    utilizations: tuple[float, ...],
    repeats: int,
    duration_s: float,
    progress: Progress,
) -> list[list[dict[str, Any]]]:
    """Every level `repeats` times, interleaved; each level's runs.

    quote: two rounds a call. The replica's busy time per call sets the levels; each
    level's rate comes from the service time the last run measured, as a busier replica
    waits less often for a CPU and so takes less time per round. Later repeats offer the
    rates of the first, so that they repeat one experiment. Levels are interleaved across
    repeats (25, 50, 75%, 25, 50, 75% ...): a drift of the shared machine's load hits every
    level alike instead of one.
    """
    busy_per_call_s = 2 * max(busy_per_round_s, 1e-6)
    rates: list[float] = []
    runs: list[list[dict[str, Any]]] = [[] for _ in utilizations]
    previous = {"service_s": busy_per_round_s}
    for repeat in range(repeats):
        for i, u in enumerate(utilizations):
            if repeat == 0:
                service_s = previous["service_s"]
                rates.append(u / (2 * service_s if service_s > 0 else busy_per_call_s))
            progress(
                f"repeat {repeat + 1}/{repeats}, level {u:.0%}: {rates[i]:.1f} calls/s "
                f"for {duration_s:g} s"
            )
            previous = run_level(level_config(arch, rates[i], duration_s), progress)
            runs[i].append(previous)
    return runs


def fit_runs(probes: list[dict[str, Any]], measured: list[dict[str, Any]]) -> Fit:
    """CPU per round and background CPU fitted over every level's run; each run's own
    service per round (set on it as `round_service_s`); the delay outside the replica
    beyond each probe's service per round, and the probe the twins take (the median of
    the undisturbed ones, `loadtest/calibration/disturbance.py`).

    A round's own service is the replica's busy time in a run's steady window without the
    background work the fit found (health checks, timers: 1.3-2% of the replica), per
    round served there. Charged per round, the background would lengthen every simulated
    round by 0.3-1.5 ms at the lower levels; as work of its own it delays a round by a
    few hundredths of a ms (a short job now and then), so the twin leaves it out of its
    rounds and adds it to its busy share only.
    """
    round_cpu_s, idle_cpu = fit_cpu_per_round([CpuStretch(**run["cpu"]) for run in measured])
    for run in measured:
        run["round_service_s"] = busy_per_round(CpuStretch(**run["window"]), idle_cpu)
    # Beyond the probe's own service per round: a call of two such rounds is nearly all
    # delay outside, so an error in what is subtracted moves the delay little.
    fitted = []
    for probe in probes:
        probe_round_s = busy_per_round(CpuStretch(**probe["window"]), idle_cpu)
        fitted.append(
            (probe_round_s, *delay_outside(probe.pop("clean_latencies_ms"), probe_round_s))
        )
    delays_s = [network_s for _, network_s, _ in fitted]
    reasons = probe_disturbances(delays_s)
    chosen = median_probe(delays_s, reasons)
    described = [
        {
            "network_ms": network_s * 1e3,
            "network_cv": network_cv,
            "cpu_wait_share": wait_share(probe),
            "disturbed": reason,
            "chosen": i == chosen,
        }
        for i, ((_, network_s, network_cv), probe, reason) in enumerate(
            zip(fitted, probes, reasons, strict=True)
        )
    ]
    return Fit(round_cpu_s, idle_cpu, *fitted[chosen], probes=described, chosen=chosen)


def _disturbed(
    fit: Fit, levels: list[dict[str, Any]], spread_wait: float, typical: float
) -> list[str]:
    """What the report flags instead of reporting: probes and levels that met a busy
    machine (each level's medians leave its disturbed runs out), and a service-spread run
    whose replica waited for a CPU as a disturbed level run does: every twin takes that
    spread, the machine's waits in it, so then no level is reported."""
    found = []
    if spread_wait > min(DISTURBED_WAIT_SHARE, max(OUTLIER_FLOOR, OUTLIER_FACTOR * typical)):
        found.append(
            f"service spread: the replica waited for a CPU {spread_wait:.0%} of its busy "
            f"time where the level runs waited {typical:.0%}: the spread every twin takes "
            "is the machine's too"
        )
    if found:
        for row in levels:
            row["ratio"] = dict.fromkeys(row["ratio"])
            row["disturbed"].append("a twin's input met the busy machine: not reported")
    found += [
        f"probe {i + 1}: {probe['disturbed']}"
        for i, probe in enumerate(fit.probes)
        if probe["disturbed"]
    ]
    for row in levels:
        found += [f"level {row['target_utilization']:.0%}: {text}" for text in row["disturbed"]]
    runs = sum(len(row["live"]) for row in levels)
    busy = sum(text.startswith("run ") for row in levels for text in row["disturbed"])
    if busy * 2 > runs:
        found.append(
            f"{busy} of {runs} level runs were disturbed: the machine was busy throughout, "
            "the probes' delay outside the replica with it"
        )
    return found


def _simulated_held() -> int:
    """The memory of a held call labsim's defaults use."""
    return SimParams().cluster.held_call_bytes


def _calibrated(probe: dict[str, Any], fit: Fit) -> dict[str, Any]:
    """The report's fitted figures and the workload's settings."""
    return {
        "round_cpu_ms": fit.round_cpu_s * 1e3,
        # The probe's calls spend no CPU in the tool: its busy time per round, and
        # that without the background work (what the delay is measured beyond).
        "probe_service_ms": probe["service_s"] * 1e3,
        "probe_round_ms": fit.probe_round_s * 1e3,
        "idle_cpu_per_s": fit.idle_cpu_per_s,
        "network_ms": fit.network_s * 1e3,
        "network_cv": fit.network_cv,
        "quote_cpu_ms": QUOTE_CPU_MS,
        "think_time_median_s": THINK_MEDIAN_S,
        "think_time_sigma": THINK_SIGMA,
        "pacing_s": PACING_S,
    }


def _spread_inputs(spread: ServiceSpread) -> dict[str, Any]:
    """What the simulation's replica takes as its service time per round: the mean of each
    level's own, and this spread (one user, rounds never overlapping)."""
    return {
        "service_cv": spread.cv,
        "service_cv_rounds": spread.rounds,
        "service_spread_mean_ms": spread.mean_s * 1e3,
        "service_spread_p95_ms": spread.p95_s * 1e3,
        "service_spread_busy_ms": spread.busy_s * 1e3,
        # Rounds served in that run: timed, merged (two a stretch) or unseen.
        "service_spread_served": spread.served,
        "service_spread_merged": spread.merged,
    }

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
   and simulated: lost calls and re-prompts (MRTR: none in both).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import replace
from typing import Any

from labsim.params import SimParams
from loadtest.calibration.levels import level_row
from loadtest.calibration.measure import measure_held
from loadtest.calibration.model import (
    CALLS_PER_LEVEL,
    LiveInputs,
    delay_outside,
    predict_upgrade,
)
from loadtest.calibration.run import (
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
from loadtest.harness.upgrade import restart_s
from loadtest.probes.replica_cpu import CpuStretch, busy_per_round, fit_cpu_per_round
from loadtest.probes.service_spread import ServiceSpread, spread_of

#: Shares of the replica's time the three levels aim at. The top one is 0.77, not 0.85:
#: near saturation a p95 grows as 1 / (1 - utilisation), so at 0.85 the few points between
#: the level aimed at and the one reached on a shared core (0.85 vs 0.89) move it by a
#: third. Not 0.75 either: a replica's service per round falls as its load grows, so a
#: level aimed at 0.75 from the lower levels' service reached 0.69 under sticky routing,
#: below the 0.7 the top level must reach.
UTILIZATIONS = (0.25, 0.50, 0.77)
#: The rolling upgrade keeps shorter pacing: its users are its sessions, and at 2 s each
#: one makes several calls in the run (what a sticky cookie pins to a replica).
UPGRADE_PACING_S = 2.0
#: Each level is run this many times and judged by its median: three is the fewest with a
#: median that one disturbed run cannot move, and 3 levels x 3 runs of 40 s fit one
#: architecture in about 8 minutes.
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
#: The rolling upgrade: two replicas, its load as a share of the (shared) core, when it
#: starts, how long a replica may drain, and the users' think time. The drain timeout is
#: short enough that it cuts calls under both legacy architectures: at 1 s SSE + store
#: cut 0 or 1 a run (0.3 live against 0.6 simulated over 3 runs, too few to compare); at
#: 0.3 s 3-6 a run, and sticky 8-18.
UPGRADE_UTILIZATION = 0.3
UPGRADE_AT_S = 4.0
UPGRADE_DRAIN_TIMEOUT_S = 0.3
UPGRADE_THINK_MEDIAN_S = 0.5
UPGRADE_THINK_SIGMA = 0.6


def measure_service_spread(arch: str, duration_s: float, progress: Progress) -> ServiceSpread:
    """The spread of the replica's service time per round, from its runnable stretches
    while one user calls in a closed loop (`loadtest/probes/service_spread.py`)."""
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
    return replace(spread, busy_s=run["service_s"], served=cpu["rounds"])


def run_calibration(
    arch: str = "mrtr",
    *,
    duration_s: float = 15.0,
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
    legacy = arch != "mrtr"
    progress(f"probe: {PROBE_RATE_PER_S:g} calls/s of no CPU for {probe_s:g} s")
    probe = run_level(level_config(arch, PROBE_RATE_PER_S, probe_s, quote_cpu_ms=0.0), progress)
    spread = measure_service_spread(arch, spread_s or probe_s, progress)
    # quote: two rounds a call. The replica's busy time per call sets the levels; each
    # level's rate comes from the service time the last run measured, as a busier replica
    # waits less often for a CPU and so takes less time per round. Later repeats offer
    # the rates of the first, so that they repeat one experiment.
    busy_per_call_s = 2 * max(spread.busy_s, 1e-6)
    rates: list[float] = []
    runs: list[list[dict[str, Any]]] = [[] for _ in utilizations]
    previous = {"service_s": spread.busy_s}
    # Levels interleaved across repeats (25, 50, 75%, 25, 50, 75% ...): a drift of the
    # shared machine's load hits every level alike instead of one.
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
    measured = [run for level in runs for run in level]
    stretches = [CpuStretch(**lv["cpu"]) for lv in measured]
    round_cpu_s, idle_cpu = fit_cpu_per_round(stretches)
    # A round's own service: the replica's busy time in a run's steady window without the
    # background work the fit found (health checks, timers: 1.3-2% of the replica), per
    # round served there. Charged per round, the background would lengthen every simulated
    # round by 0.3-1.5 ms at the lower levels; as work of its own it delays a round by a
    # few hundredths of a ms (a short job now and then), so the twin leaves it out of its
    # rounds and adds it to its busy share only.
    for run in measured:
        run["round_service_s"] = busy_per_round(CpuStretch(**run["window"]), idle_cpu)
    # Beyond the probe's own service per round: a call of two such rounds is nearly all
    # delay outside, so an error in what is subtracted moves the delay little.
    probe_round_s = busy_per_round(CpuStretch(**probe["window"]), idle_cpu)
    network_s, network_cv = delay_outside(probe.pop("clean_latencies_ms"), probe_round_s)
    held = measure_held(arch, held_calls, progress) if legacy else None
    simulated_held = SimParams().cluster.held_call_bytes
    inputs = LiveInputs(
        round_cpu_s=spread.busy_s,
        round_cpu_cv=spread.cv,
        network_s=network_s,
        network_cv=network_cv,
        think_median_s=THINK_MEDIAN_S,
        think_sigma=THINK_SIGMA,
        held_call_bytes=round(held["rss_bytes_per_call"]) if held else simulated_held,
        max_restarts=LoadTestConfig().max_retries,
    )
    levels = [
        level_row(
            target,
            level_runs,
            inputs,
            arch,
            background_per_s=idle_cpu,
            simulated_calls=simulated_calls,
        )
        for target, level_runs in zip(utilizations, runs, strict=True)
    ]
    report: dict[str, Any] = {
        "arch": arch,
        "calibrated": {
            "round_cpu_ms": round_cpu_s * 1e3,
            # The probe's calls spend no CPU in the tool: its busy time per round, and
            # that without the background work (what the delay is measured beyond).
            "probe_service_ms": probe["service_s"] * 1e3,
            "probe_round_ms": probe_round_s * 1e3,
            "idle_cpu_per_s": idle_cpu,
            "network_ms": network_s * 1e3,
            "network_cv": network_cv,
            "quote_cpu_ms": QUOTE_CPU_MS,
            "think_median_s": THINK_MEDIAN_S,
            "think_sigma": THINK_SIGMA,
            "pacing_s": PACING_S,
        },
        # What the simulation's replica takes as its service time per round: the mean of
        # each level's own, and this spread (one user, rounds never overlapping).
        "inputs": {
            "service_cv": spread.cv,
            "service_cv_rounds": spread.rounds,
            "service_spread_mean_ms": spread.mean_s * 1e3,
            "service_spread_p95_ms": spread.p95_s * 1e3,
            "service_spread_busy_ms": spread.busy_s * 1e3,
            # Rounds served in that run: timed, merged (two a stretch) or unseen.
            "service_spread_served": spread.served,
            "service_spread_merged": spread.merged,
        },
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
            "simulated": simulated_held,
            "object_graph": held["object_graph_bytes_per_call"],
        }
    if upgrade_s > 0:
        report["upgrade"] = run_upgrade(arch, inputs, busy_per_call_s, upgrade_s, progress, repeats)
    report["machine"] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()}
    report["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return report


def run_upgrade(
    arch: str,
    inputs: LiveInputs,
    busy_per_call_s: float,
    duration_s: float,
    progress: Progress,
    repeats: int = 1,
) -> dict[str, Any]:
    """A live rolling upgrade of two replicas, `repeats` times, and its simulated twin.

    A run cuts a handful of calls at most, so one run's count is mostly chance: live
    figures are means over the runs (each run's kept), as the simulated ones are over seeds.
    """
    rate = UPGRADE_UTILIZATION / busy_per_call_s
    config = level_config(
        arch,
        rate,
        duration_s,
        scenario="rolling-upgrade",
        replicas=2,
        fault_at_s=UPGRADE_AT_S,
        drain_timeout_s=UPGRADE_DRAIN_TIMEOUT_S,
        think_time_median_s=UPGRADE_THINK_MEDIAN_S,
        think_time_sigma=UPGRADE_THINK_SIGMA,
        pacing_s=UPGRADE_PACING_S,
    )
    runs = []
    for repeat in range(repeats):
        progress(
            f"rolling upgrade {repeat + 1}/{repeats}: 2 replicas, {rate:.1f} calls/s "
            f"for {duration_s:g} s"
        )
        live = run_level(config, progress)
        runs.append(
            {
                "lost": live["lost"],
                "re_prompts": live["re_prompts"],
                "restarts": live["retries"],
                "calls": live["calls"],  # the whole run's, as the twin's are
                "restart_s": restart_s(live["faults"]),
                "offered_per_s": live["offered_per_s"],
            }
        )
    restart = statistics.fmean(run["restart_s"] for run in runs)
    # The twin is offered what the users started, not the rate asked: a user's next call
    # waits for its last (think time included) to end, so at 2 s pacing about a third of
    # the calls asked for never start (in a trial, 179 calls live where 272 were asked).
    offered = statistics.fmean(run["offered_per_s"] for run in runs)
    simulated = predict_upgrade(
        replace(inputs, think_median_s=UPGRADE_THINK_MEDIAN_S, think_sigma=UPGRADE_THINK_SIGMA),
        arch,
        replicas=2,
        rate_per_s=offered,
        duration_s=duration_s,
        upgrade_at_s=UPGRADE_AT_S,
        drain_timeout_s=UPGRADE_DRAIN_TIMEOUT_S,
        restart_s=restart,
        # A live user is one session: the calls it made in the run.
        calls_per_session=statistics.fmean(run["calls"] for run in runs) / config.users,
    )
    # Calls started again (legacy) or rounds sent again (MRTR) after a cut: live, a cut
    # shows when the answer is refused; simulated, at once (no re-prompt if unanswered).
    simulated["restarts"] += simulated["retries"]

    def figure(key: str) -> dict[str, Any]:
        measured = [run[key] for run in runs]
        return {
            "measured": statistics.fmean(measured),
            "predicted": simulated[key],
            "measured_runs": measured,
        }

    return {
        "rate_per_s": rate,
        "offered_per_s": offered,
        "drain_timeout_s": UPGRADE_DRAIN_TIMEOUT_S,
        "think_median_s": UPGRADE_THINK_MEDIAN_S,
        "restart_s": restart,
        "repeats": repeats,
        **{key: figure(key) for key in ("lost", "re_prompts", "restarts", "calls")},
    }

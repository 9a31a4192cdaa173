"""Calibration: the live cluster and its simulated twin at the same loads, side by side.

    python -m loadtest calibrate --arch mrtr|sticky|sse-store [--json F]

The simulation is worth trusting only if, given parameters measured on the real system,
it predicts that system. For one architecture:

1. A probe: one replica (pinned to CPU 0 with HAProxy; Locust on CPU 1) at a low load
   of `quote` calls that spend no CPU of their own, so that a call's latency is nearly
   all delay outside the replica: beyond the replica's small busy time per round, it
   gives the per-round delay of client, balancer and wire (a lognormal).
   Then the spread of the replica's service time per round, timed round by round on
   the replica's thread while one user calls (`loadtest/service_spread.py`); its busy
   time per round sets the three load levels.
2. Three open-loop levels at about 25%, 50% and 75% of the replica's time, each run
   `repeats` times, interleaved: users start `quote` calls (one question, two rounds,
   `QUOTE_CPU_MS` of CPU per round, so that one Locust process can load a replica) at
   exponential intervals and think for a lognormal time before answering. Measured:
   throughput, p50 and p95 of a call's latency without think time, the replica's CPU
   (from /proc), and for the legacy architectures the calls waiting at each moment.
3. The replica's service time per round is what it was busy with each round: its CPU
   time plus the time it waited for a CPU held by other programs (on a quiet machine
   nearly nothing; on a shared one, the difference between a fast and a slow replica).
   labsim gets each run's mean service time with the measured spread, the network
   delay, the rate the run offered and the think time (`loadtest/calibration_model.py`)
   and predicts every figure; a level's figures are the medians over its runs
   (`loadtest/calibration_levels.py`). The CPU per round alone is fitted over all runs
   and reported beside it.
4. Legacy architectures: the memory a held call adds (live, `loadtest/held_memory.py`)
   beside the value labsim's defaults use.
5. A rolling upgrade of two replicas with the same drain timeout and think time, live
   and simulated: lost calls and re-prompts (MRTR: none in both).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from labsim.params import SimParams
from loadtest.calibration_levels import level_row
from loadtest.calibration_model import LiveInputs, delay_outside, predict_upgrade
from loadtest.cluster import Cluster
from loadtest.config import LoadTestConfig
from loadtest.measure import measure_held
from loadtest.replica_cpu import CpuMeter, CpuStretch, fit_cpu_per_round
from loadtest.scenarios import run_scenario
from loadtest.service_spread import RunStateSampler, ServiceSpread, spread_of
from loadtest.upgrade import restart_s
from loadtest.waiting_calls import WaitingSampler

#: Shares of the replica's time the three levels aim at. The top one stays at 0.75: near
#: saturation a p95 grows as 1 / (1 - utilisation), so at 0.85 the few points between the
#: level aimed at and the one reached on a shared core (0.85 vs 0.89) move it by a third,
#: and a health check then and again waits out its timeout behind the queue.
UTILIZATIONS = (0.25, 0.50, 0.75)
#: CPU a `quote` call spends per round, ms: enough that one Locust process can offer 85%
#: of a replica's CPU (the server's own work per round is about 0.2 ms, Locust's per call more).
QUOTE_CPU_MS = 8.0
#: Mean seconds between a user's calls: users = rate x pacing. A user's next call waits
#: for its last to end, so a gap shorter than a call is lost and the users' calls together
#: are a little smoother than the Poisson stream labsim offers, most of all when the
#: replica is slow: at 2 s (one gap in eight lost) the twin's p95 at about 70% of the
#: replica came out 10-17% above live in 3 runs of 3; at 8 s (one in thirty) 0.87-1.17x.
PACING_S = 8.0
#: The rolling upgrade keeps shorter pacing: its users are its sessions, and at 2 s each
#: one makes several calls in the run (what a sticky cookie pins to a replica).
UPGRADE_PACING_S = 2.0
THINK_MEDIAN_S = 0.2
THINK_SIGMA = 0.5
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
#: Seconds at the start of a level left out (users spawning, connections opening).
WARMUP_S = 3.0
#: The probe's load: light, so that even on a busy shared machine nothing queues, and
#: its calls spend no CPU in the tool (a round is then about 0.3 ms of the replica's
#: time), so subtracting it leaves the delay outside nearly untouched.
PROBE_RATE_PER_S = 10.0
#: Legacy calls held at once to measure the memory of one.
HELD_CALLS = 100
#: The rolling upgrade: two replicas, its load as a share of the (shared) core, when it
#: starts, how long a replica may drain, and the users' think time (long enough that a
#: drain timeout cuts some legacy calls).
UPGRADE_UTILIZATION = 0.3
UPGRADE_AT_S = 4.0
UPGRADE_DRAIN_TIMEOUT_S = 1.0
UPGRADE_THINK_MEDIAN_S = 0.5
UPGRADE_THINK_SIGMA = 0.6

Progress = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def level_config(arch: str, rate_per_s: float, duration_s: float, **fields: Any) -> LoadTestConfig:
    """The load-test settings of one calibration run offering `rate_per_s` calls/s."""
    pacing_s = fields.pop("pacing_s", PACING_S)
    users = max(1, round(rate_per_s * pacing_s)) if pacing_s else 1
    settings: dict[str, Any] = {
        "arch": arch,
        "scenario": "steady",
        "replicas": 1,
        "users": users,
        # All within a second or two: each user waits an exponential gap before its first
        # call too, so together they offer a Poisson stream from the start.
        "spawn_rate": max(1.0, users / 2),
        "duration_s": duration_s,
        "pacing_s": pacing_s,
        "think_time_median_s": THINK_MEDIAN_S,
        "think_time_sigma": THINK_SIGMA,
        "tool_mix": {"quote": 1.0},
        "quote_cpu_ms": QUOTE_CPU_MS,
        "pin_cores": True,
        **fields,
    }
    return LoadTestConfig(**settings)


def run_level(
    config: LoadTestConfig, progress: Progress = _stderr, *, time_rounds: bool = False
) -> dict[str, Any]:
    """One live level: throughput, latency, replica CPU and waiting calls in its window;
    with `time_rounds`, the first replica's runnable stretches too (`service_spread`)."""
    hooks: dict[str, Any] = {}

    def on_cluster(cluster: Cluster, moment: str) -> None:
        pids = [r.pid for r in cluster.replicas.values() if r.pid]
        if moment == "before":
            hooks["meter"] = CpuMeter(pids, every_s=0.25)
            hooks["meter"].start()
            hooks["sampler"] = WaitingSampler(cluster)
            hooks["sampler"].start()
            if time_rounds:
                hooks["rounds"] = RunStateSampler(pids[0])
                hooks["rounds"].start()
        else:
            hooks["sampler"].stop()
            hooks["stretches"] = hooks["rounds"].stop() if time_rounds else []
            # A replaced replica's CPU is gone with its process: upgrades are not metered.
            steady = config.scenario == "steady"
            hooks["cpu"] = hooks["meter"].stop(0) if steady else CpuStretch()
            hooks["window"] = hooks["meter"].window if steady else None

    summary = run_scenario(config, progress=progress, on_cluster=on_cluster)
    calls = summary["calls"]
    first = min((c["started"] for c in calls), default=0.0)
    # The steady window: after the users have spawned, and one second short of the end.
    start, stop = first + WARMUP_S, first + config.duration_s - 1.0
    span = max(stop - start, 1e-9)
    window = [c for c in calls if start <= c["started"] <= stop]
    done = [c for c in window if c["outcome"] == "completed"]
    latencies = [c["latency_ms"] for c in done]
    # Calls that went straight through (no retry, no restart): the network delay's sample.
    clean = [c["latency_ms"] for c in done if not c["retries"] and not c["re_prompts"]]
    cpu: CpuStretch = hooks["cpu"]
    cpu.rounds = sum(c["rounds"] for c in calls)
    # The replica's share of time busy in the steady window; the whole run's would count
    # the seconds before the load generator's first call and after its last.
    busy = hooks["window"](start, stop) if hooks["window"] else cpu
    return {
        "offered_per_s": len(window) / span,
        "users": config.users,
        "completed": len(done),
        "not_completed": len(window) - len(done),
        "throughput_per_s": len(done) / span,
        "p50_ms": _quantile(latencies, 0.50),
        "p95_ms": _quantile(latencies, 0.95),
        # Busy: CPU time plus the wait for a CPU that other programs held (schedstat).
        "utilization": busy.busy_s / busy.span_s if busy.span_s else float("nan"),
        "cpu_utilization": busy.cpu_s / busy.span_s if busy.span_s else float("nan"),
        "service_s": cpu.busy_s / cpu.rounds if cpu.rounds else float("nan"),
        "cpu": vars(cpu),
        "mean_waiting_calls": hooks["sampler"].mean(start, stop),
        "clean_latencies_ms": clean,
        "errors": summary["errors"],
        "lost": summary["lost"],
        "re_prompts": summary["re_prompts"],
        "retries": summary["retries"],
        "faults": summary["faults"],
        "stretches": hooks["stretches"],
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure_service_spread(arch: str, duration_s: float, progress: Progress) -> ServiceSpread:
    """The spread of the replica's service time per round, from its runnable stretches
    while one user calls in a closed loop (`loadtest/service_spread.py`)."""
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
    progress: Progress = _stderr,
) -> dict[str, Any]:
    """Probe, service spread, three levels `repeats` times, held memory and a rolling
    upgrade; live beside simulated. The service-spread run lasts `spread_s` (the probe's
    duration unless given)."""
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
    # Beyond the probe's own service per round: its busy time without the background work
    # the fit found (health checks and timers, which at 10 calls/s are most of the busy
    # time). A call of two such rounds is nearly all delay outside, so an error in what is
    # subtracted moves the delay little.
    probe_cpu = CpuStretch(**probe["cpu"])
    probe_round_s = max(0.0, probe_cpu.busy_s - idle_cpu * probe_cpu.span_s) / max(
        probe_cpu.rounds, 1
    )
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
        level_row(target, level_runs, inputs, arch)
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
                "calls": live["completed"] + live["not_completed"],
                "restart_s": restart_s(live["faults"]),
            }
        )
    restart = statistics.fmean(run["restart_s"] for run in runs)
    simulated = predict_upgrade(
        replace(inputs, think_median_s=UPGRADE_THINK_MEDIAN_S, think_sigma=UPGRADE_THINK_SIGMA),
        arch,
        replicas=2,
        rate_per_s=rate,
        duration_s=duration_s,
        upgrade_at_s=UPGRADE_AT_S,
        drain_timeout_s=UPGRADE_DRAIN_TIMEOUT_S,
        restart_s=restart,
        calls_per_session=duration_s / UPGRADE_PACING_S,
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
        "drain_timeout_s": UPGRADE_DRAIN_TIMEOUT_S,
        "think_median_s": UPGRADE_THINK_MEDIAN_S,
        "restart_s": restart,
        "repeats": repeats,
        **{key: figure(key) for key in ("lost", "re_prompts", "restarts", "calls")},
    }

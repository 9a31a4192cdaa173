"""Calibration: the live cluster and its simulated twin at the same loads, side by side.

    python -m loadtest calibrate --arch mrtr|sticky|sse-store [--json F]

The simulation is worth trusting only if, given parameters measured on the real system,
it predicts that system. For one architecture:

1. A probe: one replica (pinned to CPU 0 with HAProxy; Locust on CPU 1) at a low load.
   Its CPU per round sets the three load levels, and its call latencies, beyond the
   replica's CPU, give the per-round delay of client, balancer and wire (a lognormal).
2. Three open-loop levels at about 25%, 50% and 75% of the replica's time: users start
   `quote` calls (one question, two rounds, `QUOTE_CPU_MS` of CPU per round, so that one
   Locust process can load a replica) at exponential intervals and think for a lognormal
   time before answering. Measured: throughput, p50 and p95 of a call's latency without
   think time, the replica's CPU (from /proc), and for the legacy architectures the calls
   waiting at each moment (`/healthz`).
3. The replica's service time per round is what it was busy with each round: its CPU
   time plus the time it waited for a CPU held by other programs (on a quiet machine
   nearly nothing; on a shared one, the difference between a fast and a slow replica).
   labsim gets each level's service time, the network delay, the rate the level
   offered and the think time (`loadtest/calibration_model.py`) and predicts every
   figure. The CPU per round alone is fitted over all levels and reported beside it.
4. Legacy architectures: the memory a held call adds (live, `loadtest/held_memory.py`)
   beside the value labsim's defaults use.
5. A rolling upgrade of two replicas with the same drain timeout and think time, live
   and simulated: lost calls and re-prompts (MRTR: none in both).
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx

from labsim.params import SimParams
from loadtest.calibration_model import LiveInputs, network_delay, predict_level, predict_upgrade
from loadtest.cluster import Cluster
from loadtest.config import LoadTestConfig
from loadtest.measure import measure_held
from loadtest.replica_cpu import CpuMeter, CpuStretch, fit_cpu_per_round
from loadtest.scenarios import run_scenario
from loadtest.upgrade import restart_s

#: Shares of the replica's time the three levels aim at. The top one stays at 0.75: near
#: saturation a p95 grows as 1 / (1 - utilisation), so at 0.85 the few points between the
#: level aimed at and the one reached on a shared core (0.85 vs 0.89) move it by a third,
#: and a health check then and again waits out its timeout behind the queue.
UTILIZATIONS = (0.25, 0.50, 0.75)
#: CPU a `quote` call spends per round, ms: enough that one Locust process can offer 85%
#: of a replica's CPU (the server's own work per round is about 0.3 ms, Locust's per call more).
QUOTE_CPU_MS = 8.0
#: Mean seconds between a user's calls: users = rate x pacing. Much longer than a call
#: (rounds plus think time), so the users' calls together are close to a Poisson stream.
PACING_S = 2.0
THINK_MEDIAN_S = 0.2
THINK_SIGMA = 0.5
#: Seconds at the start of a level left out (users spawning, connections opening).
WARMUP_S = 3.0
#: The probe's load: light, so that even on a busy shared machine nothing queues.
PROBE_RATE_PER_S = 5.0
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
    users = max(1, round(rate_per_s * PACING_S))
    settings: dict[str, Any] = {
        "arch": arch,
        "scenario": "steady",
        "replicas": 1,
        "users": users,
        # Spawned over one pacing interval, so the users' first calls do not all coincide.
        "spawn_rate": users / PACING_S,
        "duration_s": duration_s,
        "pacing_s": PACING_S,
        "think_time_median_s": THINK_MEDIAN_S,
        "think_time_sigma": THINK_SIGMA,
        "tool_mix": {"quote": 1.0},
        "quote_cpu_ms": QUOTE_CPU_MS,
        "pin_cores": True,
        **fields,
    }
    return LoadTestConfig(**settings)


class WaitingSampler:
    """Counts the legacy calls waiting on every replica, a few times a second."""

    def __init__(self, cluster: Cluster, every_s: float = 0.25) -> None:
        self.cluster = cluster
        self.every_s = every_s
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=1.0) as http:
            while not self._stop.wait(self.every_s):
                waiting = 0
                for replica in list(self.cluster.replicas.values()):
                    try:
                        waiting += http.get(f"{replica.base_url}/healthz").json()["waiting_calls"]
                    except (httpx.HTTPError, ValueError, KeyError):
                        continue
                self.samples.append((time.time(), waiting))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def mean(self, start: float, stop: float) -> float:
        window = [n for t, n in self.samples if start <= t <= stop]
        return statistics.fmean(window) if window else 0.0


def run_level(config: LoadTestConfig, progress: Progress = _stderr) -> dict[str, Any]:
    """One live level: throughput, latency, replica CPU and waiting calls in its window."""
    hooks: dict[str, Any] = {}

    def on_cluster(cluster: Cluster, moment: str) -> None:
        if moment == "before":
            hooks["meter"] = CpuMeter(r.pid for r in cluster.replicas.values() if r.pid)
            hooks["meter"].start()
            hooks["sampler"] = WaitingSampler(cluster)
            hooks["sampler"].start()
        else:
            hooks["sampler"].stop()
            # A replaced replica's CPU is gone with its process: upgrades are not metered.
            steady = config.scenario == "steady"
            hooks["cpu"] = hooks["meter"].stop(0) if steady else CpuStretch()

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
    return {
        "offered_per_s": len(window) / span,
        "users": config.users,
        "completed": len(done),
        "not_completed": len(window) - len(done),
        "throughput_per_s": len(done) / span,
        "p50_ms": _quantile(latencies, 0.50),
        "p95_ms": _quantile(latencies, 0.95),
        # Busy: CPU time plus the wait for a CPU that other programs held (schedstat).
        "utilization": cpu.busy_s / cpu.span_s if cpu.span_s else float("nan"),
        "cpu_utilization": cpu.cpu_s / cpu.span_s if cpu.span_s else float("nan"),
        "service_s": cpu.busy_s / cpu.rounds if cpu.rounds else float("nan"),
        "cpu": vars(cpu),
        "mean_waiting_calls": hooks["sampler"].mean(start, stop),
        "clean_latencies_ms": clean,
        "errors": summary["errors"],
        "lost": summary["lost"],
        "re_prompts": summary["re_prompts"],
        "retries": summary["retries"],
        "faults": summary["faults"],
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ratio(predicted: float, measured: float) -> float:
    return predicted / measured if measured else float("nan")


def run_calibration(
    arch: str = "mrtr",
    *,
    duration_s: float = 15.0,
    probe_s: float = 15.0,
    upgrade_s: float = 16.0,
    utilizations: tuple[float, ...] = UTILIZATIONS,
    held_calls: int = HELD_CALLS,
    progress: Progress = _stderr,
) -> dict[str, Any]:
    """Probe, three levels, held memory and a rolling upgrade; live beside simulated."""
    legacy = arch != "mrtr"
    progress(f"probe: {PROBE_RATE_PER_S:g} calls/s for {probe_s:g} s")
    probe = run_level(level_config(arch, PROBE_RATE_PER_S, probe_s), progress)
    # quote: two rounds a call. The replica's busy time per call sets the levels; each
    # level's rate comes from the service time the last run measured, as a busier replica
    # waits less often for a CPU and so takes less time per round.
    busy_per_call_s = 2 * max(probe["service_s"], 1e-6)
    measured: list[dict[str, Any]] = []
    for u in utilizations:
        service_s = measured[-1]["service_s"] if measured else probe["service_s"]
        rate = u / (2 * service_s if service_s > 0 else busy_per_call_s)  # NaN: none served
        progress(f"level {u:.0%}: {rate:.1f} calls/s for {duration_s:g} s")
        measured.append(run_level(level_config(arch, rate, duration_s), progress))
    stretches = [CpuStretch(**lv["cpu"]) for lv in (probe, *measured)]
    round_cpu_s, idle_cpu = fit_cpu_per_round(stretches)
    delays = [ms / 1e3 - busy_per_call_s for ms in probe.pop("clean_latencies_ms")]
    network_s, network_cv = network_delay(delays)
    held = measure_held(arch, held_calls, progress) if legacy else None
    simulated_held = SimParams().cluster.held_call_bytes
    inputs = LiveInputs(
        round_cpu_s=probe["service_s"],
        network_s=network_s,
        network_cv=network_cv,
        think_median_s=THINK_MEDIAN_S,
        think_sigma=THINK_SIGMA,
        held_call_bytes=round(held["rss_bytes_per_call"]) if held else simulated_held,
        max_restarts=LoadTestConfig().max_retries,
    )
    levels = []
    for target, level in zip(utilizations, measured, strict=True):
        level.pop("clean_latencies_ms")
        # Each level is simulated with the replica's busy time per round measured in it.
        service = replace(inputs, round_cpu_s=level["service_s"])
        predicted = predict_level(service, arch, level["offered_per_s"])
        row: dict[str, Any] = {
            "target_utilization": target,
            "utilization": level["utilization"],
            "utilization_predicted": predicted["utilization"],
            "cpu_utilization": level["cpu_utilization"],
            "service_ms": level["service_s"] * 1e3,
            "offered_per_s": level["offered_per_s"],
        }
        for key, name in (("throughput_per_s", "throughput"), ("p50_ms", "p50_ms")):
            row[name] = {"measured": level[key], "predicted": predicted[key]}
        row["p95_ms"] = {"measured": level["p95_ms"], "predicted": predicted["p95_ms"]}
        if legacy:
            row["held_memory_bytes"] = {
                "measured": level["mean_waiting_calls"] * inputs.held_call_bytes,
                "predicted": predicted["held_memory_bytes"],
            }
        row["ratio"] = {
            key: _ratio(row[key]["predicted"], row[key]["measured"])
            for key in ("throughput", "p50_ms", "p95_ms")
        }
        row["live"] = {
            k: level[k] for k in ("users", "completed", "not_completed", "cpu", "errors")
        }
        levels.append(row)
    report: dict[str, Any] = {
        "arch": arch,
        "calibrated": {
            "round_cpu_ms": round_cpu_s * 1e3,
            "probe_service_ms": probe["service_s"] * 1e3,
            "idle_cpu_per_s": idle_cpu,
            "network_ms": network_s * 1e3,
            "network_cv": network_cv,
            "quote_cpu_ms": QUOTE_CPU_MS,
            "think_median_s": THINK_MEDIAN_S,
            "think_sigma": THINK_SIGMA,
            "pacing_s": PACING_S,
        },
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
        report["upgrade"] = run_upgrade(arch, inputs, busy_per_call_s, upgrade_s, progress)
    report["machine"] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()}
    report["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return report


def run_upgrade(
    arch: str, inputs: LiveInputs, busy_per_call_s: float, duration_s: float, progress: Progress
) -> dict[str, Any]:
    """A live rolling upgrade of two replicas and its simulated twin."""
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
    )
    progress(f"rolling upgrade: 2 replicas, {rate:.1f} calls/s for {duration_s:g} s")
    live = run_level(config, progress)
    restart = restart_s(live["faults"])
    simulated = predict_upgrade(
        replace(inputs, think_median_s=UPGRADE_THINK_MEDIAN_S, think_sigma=UPGRADE_THINK_SIGMA),
        arch,
        replicas=2,
        rate_per_s=rate,
        duration_s=duration_s,
        upgrade_at_s=UPGRADE_AT_S,
        drain_timeout_s=UPGRADE_DRAIN_TIMEOUT_S,
        restart_s=restart,
        calls_per_session=duration_s / PACING_S,
    )
    return {
        "rate_per_s": rate,
        "drain_timeout_s": UPGRADE_DRAIN_TIMEOUT_S,
        "think_median_s": UPGRADE_THINK_MEDIAN_S,
        "restart_s": restart,
        "lost": {"measured": live["lost"], "predicted": simulated["lost"]},
        "re_prompts": {"measured": live["re_prompts"], "predicted": simulated["re_prompts"]},
        # Calls started again (legacy) or rounds sent again (MRTR) after a cut: live, a cut
        # shows when the answer is refused; simulated, at once (no re-prompt if unanswered).
        "restarts": {
            "measured": live["retries"],
            "predicted": simulated["restarts"] + simulated["retries"],
        },
        "calls": {
            "measured": live["completed"] + live["not_completed"],
            "predicted": simulated["calls"],
        },
    }


def print_calibration(report: dict[str, Any]) -> None:
    """The side-by-side table."""
    c = report["calibrated"]
    print(
        f"{report['arch']}: CPU {c['round_cpu_ms']:.3f} ms per round (fitted; quote spends "
        f"{c['quote_cpu_ms']:g}), busy {c['probe_service_ms']:.3f} ms at the probe; network + LB "
        f"+ client {c['network_ms']:.3f} ms per round "
        f"(mean, lognormal cv {c['network_cv']:.2f}); think median {c['think_median_s']:g} s"
    )
    print(
        f"{'busy':>5} {'sim':>5} {'cpu':>5} {'svc ms':>6}  {'calls/s':>8} {'sim':>8} "
        f"{'ratio':>5}   {'p50 ms':>7} {'sim':>7} {'ratio':>5}   {'p95 ms':>7} {'sim':>7} "
        f"{'ratio':>5}"
    )
    for row in report["levels"]:
        t, p50, p95 = row["throughput"], row["p50_ms"], row["p95_ms"]
        r = row["ratio"]
        print(
            f"{row['utilization']:>5.2f} {row['utilization_predicted']:>5.2f} "
            f"{row['cpu_utilization']:>5.2f} {row['service_ms']:>6.2f}  "
            f"{t['measured']:>8.1f} {t['predicted']:>8.1f} {r['throughput']:>5.2f}   "
            f"{p50['measured']:>7.2f} "
            f"{p50['predicted']:>7.2f} {r['p50_ms']:>5.2f}   {p95['measured']:>7.2f} "
            f"{p95['predicted']:>7.2f} {r['p95_ms']:>5.2f}"
        )
        if "held_memory_bytes" in row:
            held = row["held_memory_bytes"]
            print(
                f"      held memory: {held['measured'] / 1024:.0f} KiB live, "
                f"{held['predicted'] / 1024:.0f} KiB simulated"
            )
    if "held_call_bytes" in report:
        h = report["held_call_bytes"]
        print(
            f"held call: {h['measured'] / 1024:.1f} KiB measured (RSS), "
            f"{h['simulated'] / 1024:.1f} KiB in labsim's defaults "
            f"(object graph {h['object_graph'] / 1024:.1f} KiB)"
        )
    if "upgrade" in report:
        up = report["upgrade"]
        print(
            f"rolling upgrade (drain timeout {up['drain_timeout_s']:g} s, think median "
            f"{up['think_median_s']:g} s, restart {up['restart_s']:.2f} s): lost "
            f"{up['lost']['measured']} live / {up['lost']['predicted']:.1f} sim, re-prompts "
            f"{up['re_prompts']['measured']} live / {up['re_prompts']['predicted']:.1f} sim, "
            f"restarts {up['restarts']['measured']} live / {up['restarts']['predicted']:.1f} sim"
        )

"""One live calibration run: the calibration's workload offered to the cluster, measured.

The workload is `quote` calls (one question, two rounds, `QUOTE_CPU_MS` of CPU in each)
started by users at exponential intervals; a run reports its throughput, the p50 and p95
of a call's latency without think time, the replica's busy share and CPU in its steady
window, and for the legacy architectures the calls waiting at each moment.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.probes.replica_cpu import CpuMeter, CpuStretch
from loadtest.probes.service_spread import RunStateSampler
from loadtest.probes.waiting_calls import WaitingSampler
from loadtest.scenarios.run import run_scenario

#: CPU a `quote` call spends per round, ms: enough that one Locust process can offer 85%
#: of a replica's CPU (the server's own work per round is about 0.2 ms, Locust's per call more).
QUOTE_CPU_MS = 8.0
#: The most CPU a replica spends on its event loop per round (`--cpu-inline-max-ms`): the
#: calibration measures a replica whose CPU is the loop's, as the model's one server, so
#: every quote round (8 ms, drawn around it) stays there rather than in the CPU workers.
LOOP_CPU_MAX_MS = 10.0
#: Mean seconds between a user's calls: users = rate x pacing. A user's next call waits
#: for its last to end, so a gap shorter than a call is lost and the users' calls together
#: are a little smoother than the Poisson stream labsim offers, most of all when the
#: replica is slow: at 2 s (one gap in eight lost) the twin's p95 at about 70% of the
#: replica came out 10-17% above live in 3 runs of 3; at 8 s (one in thirty) 0.87-1.17x.
PACING_S = 8.0
THINK_MEDIAN_S = 0.2
THINK_SIGMA = 0.5
#: Seconds at the start of a level left out (users spawning, connections opening).
WARMUP_S = 3.0
#: Seconds of each level run. At 15 s the top level's p95 rested on some 25 slow calls a
#: run: `mrtr`'s twin came out at 0.76x live on a quiet machine (2026-12-06 01:18 UTC, as
#: the issue found), where runs of 30 s gave 0.95x (01:20 UTC) and of 40 s 1.00x; a whole
#: calibration with 30 s levels takes about 7 minutes.
LEVEL_S = 30.0

Progress = Callable[[str], None]


def print_progress(line: str) -> None:
    """Report progress of a long run on stderr, where it does not mix with the report."""
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
        "tool_cpu_ms": QUOTE_CPU_MS,
        "cpu_inline_max_ms": LOOP_CPU_MAX_MS,
        "pin_cores": True,
        **fields,
    }
    return LoadTestConfig(**settings)


def run_level(
    config: LoadTestConfig, progress: Progress = print_progress, *, time_rounds: bool = False
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
    # Rounds served in it: those of the calls started in it (a call lasts some 20 ms).
    window_rounds = sum(c["rounds"] for c in window)
    busy = hooks["window"](start, stop, window_rounds) if hooks["window"] else cpu
    return {
        "offered_per_s": len(window) / span,
        "calls": len(calls),
        "users": config.users,
        "completed": len(done),
        "not_completed": len(window) - len(done),
        "throughput_per_s": len(done) / span,
        "p50_ms": quantile(latencies, 0.50),
        "p95_ms": quantile(latencies, 0.95),
        # Busy: CPU time plus the wait for a CPU that other programs held (schedstat).
        "utilization": busy.busy_s / busy.span_s if busy.span_s else float("nan"),
        "cpu_utilization": busy.cpu_s / busy.span_s if busy.span_s else float("nan"),
        "service_s": cpu.busy_s / cpu.rounds if cpu.rounds else float("nan"),
        "cpu": vars(cpu),
        "window": vars(busy),
        "mean_waiting_calls": hooks["sampler"].mean(start, stop),
        "clean_latencies_ms": clean,
        "errors": summary["errors"],
        "lost": summary["lost"],
        "re_prompts": summary["re_prompts"],
        "retries": summary["retries"],
        "faults": summary["faults"],
        "stretches": hooks["stretches"],
    }


def quantile(values: list[float], q: float) -> float:
    """The `q` quantile of `values` (the value below which a share `q` lies); NaN if empty."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

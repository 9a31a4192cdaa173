"""One live run of a plan's workload, judged as the plan judged its simulated fleet.

The calls judged are those started in the run's window (after its warm-up) whose user
answered: a call that failed or was lost is a miss, so the p50 and p95 are over every
such call, a miss counting as slower than any. The run is judged by the constraints the
plan judged its simulation by, with the same rule (`labsim.study.constraints`): it meets
the SLO when its p95 is within the SLO's and its completed share at least the SLO's, and
the plan's limits when no replica's resident memory passed a replica's memory, the
replicas' mean CPU use stayed within the plan's target, and no work was turned away for
want of a connection (a replica's 503, the balancer's own 503 with no replica up, or a
health check that took a replica out of rotation).

A run is not judged when its replicas waited for a CPU beyond the stated share of their
busy time and its calls waited, on the mean, beyond the stated share of the SLO's p95
(other programs held the machine: its figures would be noise, `WaitLimits`), or when the
load generator started fewer calls than the plan's rate asks (it fell behind).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from labsim.study import constraints
from labsim.study.constraints import Limits, Reading
from loadtest.harness.haproxy import BACKEND, RuntimeApi
from loadtest.probes.replica_load import ReplicaSampler

#: Standard deviations of a Poisson count below its mean before the load generator is
#: said to have fallen behind.
BEHIND_SIGMAS = 4.0


@dataclass
class BalancerCounts:
    """HAProxy's counters at one moment: each replica's UP-to-DOWN transitions and 5xx
    answers, and the 5xx answers the frontend sent in all (its own among them)."""

    t: float
    down: dict[str, int]
    replica_5xx: dict[str, int]
    frontend_5xx: int


def read_balancer(api: RuntimeApi) -> BalancerCounts:
    """HAProxy's counters now."""
    rows = api.show_stat()
    servers = [
        r for r in rows if r.get("pxname") == BACKEND and r["svname"] not in ("BACKEND", "FRONTEND")
    ]
    frontend = sum(int(r.get("hrsp_5xx") or 0) for r in rows if r.get("svname") == "FRONTEND")
    return BalancerCounts(
        time.time(),
        {r["svname"]: int(r.get("chkdown") or 0) for r in servers},
        {r["svname"]: int(r.get("hrsp_5xx") or 0) for r in servers},
        frontend,
    )


class BalancerSampler:
    """Reads HAProxy's counters every `every_s` seconds, so a window can be read off them."""

    def __init__(self, api: RuntimeApi, every_s: float = 0.5) -> None:
        self.api = api
        self.every_s = every_s
        self.samples: list[BalancerCounts] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self) -> None:
        # The admin socket busy or gone: the next reading will do.
        with contextlib.suppress(OSError, RuntimeError, KeyError):
            self.samples.append(read_balancer(self.api))

    def _run(self) -> None:
        self._read()
        while not self._stop.wait(self.every_s):
            self._read()
        self._read()

    def start(self) -> BalancerSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def window(self, start: float, stop: float) -> dict[str, Any]:
        """Down-marks and 5xx answers between the readings nearest `start` and `stop`."""
        if not self.samples:
            return {"down_marks": 0, "replica_5xx": 0, "balancer_5xx": 0}
        before = min(self.samples, key=lambda s: abs(s.t - start))
        after = min(self.samples, key=lambda s: abs(s.t - stop))
        down = sum(after.down[n] - before.down.get(n, 0) for n in after.down)
        replica = sum(after.replica_5xx[n] - before.replica_5xx.get(n, 0) for n in after.down)
        front = after.frontend_5xx - before.frontend_5xx
        return {"down_marks": down, "replica_5xx": replica, "balancer_5xx": max(0, front - replica)}


@dataclass
class LiveRun:
    """What one live run measured, in its judged window."""

    replicas: int
    calls: list[dict[str, Any]]
    window_s: tuple[float, float]
    balancer: dict[str, Any]
    per_replica: dict[str, dict[str, float]]
    rate_per_s: float
    workers_per_replica: int
    config: dict[str, Any] = field(default_factory=dict)


def percentile_ms(latencies_ms: list[float], q: float) -> float:
    """The `q` quantile (nearest rank) of latencies in which a miss is infinite."""
    ordered = sorted(latencies_ms)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def per_replica(sampler: ReplicaSampler, start: float, stop: float, workers: int) -> dict:
    """Each replica's peaks and CPU in the window: connections, resident memory, CPU use
    (of its workers' time) and the share of its busy time it waited for a CPU."""
    found: dict[str, dict[str, float]] = {}
    for name, trace in sampler.traces.items():
        cpu_s, wait_s, span_s = trace.cpu_in(start, stop)
        busy_s = cpu_s + wait_s
        found[name] = {
            "peak_connections": trace.peak_connections(start, stop),
            "peak_rss_bytes": trace.peak_rss_bytes(start, stop),
            "cpu_utilization": cpu_s / (span_s * workers) if span_s else math.nan,
            "cpu_wait_share": wait_s / busy_s if busy_s > 0 else 0.0,
            "cpu_s": cpu_s,
            "cpu_wait_s": wait_s,
        }
    return found


def judge_run(
    run: LiveRun, limits: Limits, max_cpu_wait_share: float, max_cpu_wait_of_slo: float = 0.05
) -> dict[str, Any]:
    """The run's figures, its verdict against the SLO and limits, and whether it may be
    judged at all (`judged`, with a `reason` when not)."""
    start, stop = run.window_s
    window = [c for c in run.calls if start <= c["started"] <= stop]
    answered = [c for c in window if c["outcome"] != "abandoned"]
    completed = [c for c in answered if c["outcome"] == "completed"]
    latencies = [c["latency_ms"] if c["outcome"] == "completed" else math.inf for c in answered]
    share = len(completed) / len(answered) if answered else math.nan
    p50, p95 = percentile_ms(latencies, 0.50), percentile_ms(latencies, 0.95)
    completed_ms = [c["latency_ms"] for c in completed]
    replicas = run.per_replica
    peak_rss = max((r["peak_rss_bytes"] for r in replicas.values()), default=0)
    utilizations = [
        r["cpu_utilization"] for r in replicas.values() if not math.isnan(r["cpu_utilization"])
    ]
    utilization = sum(utilizations) / len(utilizations) if utilizations else math.nan
    refused = run.balancer["replica_5xx"] + run.balancer["balancer_5xx"]
    reading = Reading(
        utilization=utilization,
        peak_memory_bytes=peak_rss,
        peak_connections=max((r["peak_connections"] for r in replicas.values()), default=0),
        p95_ms=p95,
        completed_share=share,
    )
    use = constraints.use_of(reading, limits)
    broke = constraints.broke(use, refused + run.balancer["down_marks"])
    meets_slo = not {"latency", "completion"} & set(broke)
    figures: dict[str, Any] = {
        "replicas": run.replicas,
        "live": {
            "completed_share": _finite(share),
            "p50_ms": _finite(p50),
            "p95_ms": _finite(p95),
            "p95_completed_ms": _finite(percentile_ms(completed_ms, 0.95)),
            "meets_slo": meets_slo,
            "meets": not broke,
            "broke": broke,
            "use": {k: _finite(round(v, 4)) for k, v in use.items()},
            "calls": len(window),
            "answered": len(answered),
            "completed": len(completed),
            "failed": sum(c["outcome"] == "failed" for c in answered),
            "lost": sum(c["outcome"] == "lost" for c in answered),
            "abandoned": len(window) - len(answered),
            "offered_per_s": len(window) / max(stop - start, 1e-9),
            "refused_by_replicas": run.balancer["replica_5xx"],
            "refused_by_balancer": run.balancer["balancer_5xx"],
            "down_marks": run.balancer["down_marks"],
            "peak_connections": {n: r["peak_connections"] for n, r in replicas.items()},
            "peak_rss_bytes": {n: r["peak_rss_bytes"] for n, r in replicas.items()},
            "cpu_utilization": {n: _finite(r["cpu_utilization"]) for n, r in replicas.items()},
            "cpu_wait_share": {n: round(r["cpu_wait_share"], 4) for n, r in replicas.items()},
            "errors": _errors(window),
        },
    }
    waits = WaitLimits(max_cpu_wait_share, max_cpu_wait_of_slo, limits.slo_p95_ms)
    reason = _unjudged(run, figures["live"], waits)
    figures["judged"] = reason is None
    if reason is not None:
        figures["reason"] = reason
    return figures


def _unjudged(run: LiveRun, live: dict[str, Any], limits: WaitLimits) -> str | None:
    """Why the run's figures are noise rather than the plan's workload, if they are."""
    waited = {n: s for n, s in live["cpu_wait_share"].items() if s > limits.share}
    wait_per_call_ms = 1e3 * sum(r["cpu_wait_s"] for r in run.per_replica.values())
    wait_per_call_ms /= max(live["answered"], 1)
    if waited and wait_per_call_ms >= limits.of_slo * limits.slo_p95_ms:
        worst = max(waited, key=lambda n: waited[n])
        return (
            f"{_fleet(run.replicas)}: {worst} waited for a CPU {waited[worst]:.0%} of its "
            f"busy time, the calls {wait_per_call_ms:.3g} ms each on the mean (other "
            f"programs held the machine; judged: at most {limits.share:.0%} of a replica's "
            f"busy time, or less than {limits.of_slo:.0%} of the SLO's p95 a call)"
        )
    expected = run.rate_per_s * (run.window_s[1] - run.window_s[0])
    if live["calls"] < expected - BEHIND_SIGMAS * math.sqrt(max(expected, 1.0)):
        return (
            f"{_fleet(run.replicas)}: the load generator started {live['calls']} calls in "
            f"the window where the plan's rate asks about {expected:.0f} (it fell behind)"
        )
    return None


@dataclass(frozen=True)
class WaitLimits:
    """How much waiting for a CPU a judged run may have: a replica's wait as a share of
    its busy time, and the calls' wait on the mean as a share of the SLO's p95. A replica
    woken for a round of a fraction of a millisecond waits about as long again for a CPU
    on a shared machine, so a light run's share is high however little its calls lose;
    only a wait over both is noise that could move a verdict."""

    share: float
    of_slo: float
    slo_p95_ms: float


def _fleet(replicas: int) -> str:
    return f"{replicas} replica{'s' if replicas != 1 else ''}"


def _errors(calls: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in calls:
        if call.get("error") and call["outcome"] != "abandoned":
            counts[call["error"]] = counts.get(call["error"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:5])


def _finite(value: float) -> float | None:
    """A figure for JSON: None for an infinite or missing one (a p95 that is a miss)."""
    return value if isinstance(value, int | float) and math.isfinite(value) else None

"""What a fleet size achieved in simulation, judged against the SLO and the replica's limits.

A fleet of N replicas is run with seeded replications. Each constraint gets its *use*, the
share of its limit the fleet reached (1 is the limit):

- `cpu`: the replicas' mean utilisation over the CPU target;
- `memory`: an idle replica's memory plus the most any replica held for waiting calls,
  over the replica's memory;
- `connections`: the most connections any replica had open (idle keep-alives, held
  streams, requests) over the most it can have open and still serve (the limit less the
  one a request arrives on). At 1 it was full for a moment; it is broken when that had
  consequences: a request answered 503, or a health check failed and the balancer took
  the replica out of rotation;
- `latency`: the p95 server latency over every call whose user answered (a failed or
  lost call is a miss) over the SLO's;
- `completion`: the share of those calls that did not complete over the share the SLO
  allows.

The fleet meets when every use is within its limit and no replica turned work away. The p95
and the completed share come with a 95% confidence interval over the replications; a
fleet whose interval straddles the SLO, or whose runs disagree (one met everything,
another broke something: a limit reached in some runs only), gets more replications, and
is *marginal* if it still does at the most the plan allows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from labsim.model.shapes import BYTES_PER_SHAPE_GB
from labsim.study.experiments import confidence_interval
from labsim.study.plan_request import PlanRequest

RESOURCES = ("cpu", "memory", "connections")
CONSTRAINTS = (*RESOURCES, "latency", "completion")
#: What `binding` may say: a constraint, or that none is near its limit.
BINDINGS = ("none", *CONSTRAINTS)
#: A constraint this near its limit (its use) binds a fleet that cannot be smaller.
NEAR_LIMIT = 0.8


@dataclass
class Verdict:
    """A fleet size simulated with replications, judged constraint by constraint."""

    replicas: int
    p95_ms: float
    p95_ms_ci: tuple[float, float]
    completed_share: float
    completed_share_ci: tuple[float, float]
    p50_ms: float
    p95_completed_ms: float
    utilization: float
    peak_replica_memory_bytes: float
    peak_replica_connections: int
    refused_requests: float
    down_marks: float
    full_marks: float
    use: dict[str, float]
    marginal: bool = False
    runs: list[dict[str, Any]] = field(repr=False, default_factory=list)
    runs_disagree: bool = False  # some runs met everything and some did not

    def fails(self, constraint: str) -> bool:
        """Whether this fleet broke `constraint`."""
        if constraint == "connections":
            return self.refused_requests > 0 or self.full_marks > 0
        return self.use[constraint] > 1

    @property
    def meets(self) -> bool:
        """Whether this fleet meets the SLO and every limit."""
        return not self.broke()

    def broke(self) -> list[str]:
        """The constraints this fleet broke: the limits (CPU, memory, connections) first,
        then the SLO's, each group the furthest past its limit first."""
        broken = [c for c in CONSTRAINTS if self.fails(c)]
        return sorted(broken, key=lambda c: (c not in RESOURCES, -self.use[c]))

    def summary(self) -> dict[str, Any]:
        """The verdict as the plan's JSON writes it."""
        return {
            "replicas": self.replicas,
            "meets": self.meets,
            "marginal": self.marginal,
            "p95_ms": _finite(self.p95_ms),
            "p95_ms_ci": [_finite(v) for v in self.p95_ms_ci],
            "completed_share": self.completed_share,
            "completed_share_ci": list(self.completed_share_ci),
            "p50_ms": _finite(self.p50_ms),
            "p95_completed_ms": _finite(self.p95_completed_ms),
            "utilization": self.utilization,
            "peak_replica_memory_bytes": self.peak_replica_memory_bytes,
            "peak_replica_connections": self.peak_replica_connections,
            "refused_requests": self.refused_requests,
            "down_marks": self.down_marks,
            "full_marks": self.full_marks,
            "use": {k: _finite(v) for k, v in self.use.items()},
            "broke": self.broke(),
            "replications": len(self.runs),
        }


def _finite(value: float) -> float | None:
    """A figure for JSON: None for an infinite one (a p95 that is a miss)."""
    return value if math.isfinite(value) else None


def judge(
    request: PlanRequest, replicas: int, runs: Sequence[dict[str, Any]], base_memory_bytes: int
) -> Verdict:
    """Judge the runs of one fleet size against the SLO and the replica's limits."""
    p95s = [r["p95_latency_all_s"] * 1e3 for r in runs]
    p95_ms, p95_ci = _interval(p95s)
    # A run in which no call was judged (all abandoned) missed nothing.
    shares = [1.0 if math.isnan(r["completed_share"]) else r["completed_share"] for r in runs]
    share, share_ci = _interval(shares)
    share_ci = (max(0.0, share_ci[0]), min(1.0, share_ci[1]))
    utilization = _mean(r["utilization"] for r in runs)
    memory = base_memory_bytes + max(r["peak_replica_held_bytes"] for r in runs)
    connections = max(r["peak_replica_connections"] for r in runs)
    allowed_misses = 1 - request.slo_completed_share
    misses = 1 - share
    use = {
        "cpu": utilization / request.target_cpu_utilization,
        "memory": memory / request_memory_bytes(request),
        "connections": connections / (request.connection_limit - 1),
        "latency": p95_ms / request.slo_p95_ms,
        "completion": misses / allowed_misses if allowed_misses else (math.inf if misses else 0),
    }
    # Each run judged on its own (a single run's verdict is the pooled one).
    alone = {judge(request, replicas, [run], base_memory_bytes).meets for run in runs[1:]}
    if alone:
        alone.add(judge(request, replicas, [runs[0]], base_memory_bytes).meets)
    return Verdict(
        runs_disagree=len(alone) > 1,
        replicas=replicas,
        p95_ms=p95_ms,
        p95_ms_ci=p95_ci,
        completed_share=share,
        completed_share_ci=share_ci,
        p50_ms=_mean(r["p50_latency_all_s"] * 1e3 for r in runs),
        p95_completed_ms=_mean(r["p95_latency_s"] * 1e3 for r in runs),
        utilization=utilization,
        peak_replica_memory_bytes=memory,
        peak_replica_connections=connections,
        refused_requests=_mean(r["refused_requests"] for r in runs),
        down_marks=_mean(r["down_marks"] for r in runs),
        full_marks=_mean(r["full_marks"] for r in runs),
        use=use,
        runs=list(runs),
    )


def request_memory_bytes(request: PlanRequest) -> float:
    """A replica's memory in bytes (the shape's GB are 1,024 MiB)."""
    return request.memory_gb_per_replica * BYTES_PER_SHAPE_GB


def straddles(request: PlanRequest, verdict: Verdict) -> bool:
    """Whether the runs cannot tell whether this fleet meets: a confidence interval holds
    the SLO's figure, or some runs met everything and others did not."""
    low, high = verdict.p95_ms_ci
    share_low, share_high = verdict.completed_share_ci
    return (
        verdict.runs_disagree
        or (low <= request.slo_p95_ms <= high and low < high)
        or (share_low <= request.slo_completed_share <= share_high and share_low < share_high)
    )


def binding(answer: Verdict, one_fewer: Verdict | None) -> str:
    """The constraint that sets the fleet's size, or `none`.

    One replica fewer broke something: a limit (CPU, memory, connections) it broke binds,
    slow or failed calls there being its consequence (refused requests are retried late);
    latency or completion binds only alone. With nothing smaller, the constraint nearest
    its limit binds if it is near (`NEAR_LIMIT`), and otherwise none does.
    """
    if one_fewer is not None and one_fewer.broke():
        return one_fewer.broke()[0]
    nearest = max(CONSTRAINTS, key=lambda c: answer.use[c])
    return nearest if answer.use[nearest] >= NEAR_LIMIT else "none"


def _interval(values: Sequence[float]) -> tuple[float, tuple[float, float]]:
    """Mean and 95% interval of per-run figures; infinite (a miss) if any run's is."""
    if any(not math.isfinite(v) for v in values):
        finite = [v for v in values if math.isfinite(v)]
        return math.inf, (min(finite) if finite else math.inf, math.inf)
    mean, half = confidence_interval(values)
    if not math.isfinite(half):
        return mean, (mean, mean)
    return mean, (mean - half, mean + half)


def _mean(values: Any) -> float:
    sample = [v for v in values if v is not None and not math.isnan(v)]
    return sum(sample) / len(sample) if sample else math.nan

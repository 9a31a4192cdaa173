"""What a fleet size achieved in simulation, judged against the SLO and the replica's limits.

A fleet of N replicas is run with seeded replications, and judged by the constraints of
`labsim.study.constraints` (CPU, memory, connections, latency, completion), the same
rule the live check of a plan judges by. Its memory is an idle replica's plus the most
any replica held for waiting calls; its work turned away, the requests answered 503 and
the health checks that found a replica full.

The fleet meets when no constraint is broken. The p95
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

from labsim.study import constraints
from labsim.study.constraints import CONSTRAINTS, Limits, Reading
from labsim.study.experiments import confidence_interval
from labsim.study.plan import FleetVerdict
from labsim.study.plan_request import PlanRequest

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

    @property
    def meets(self) -> bool:
        """Whether this fleet meets the SLO and every limit."""
        return not self.broke()

    def broke(self) -> list[str]:
        """The constraints this fleet broke: the limits (CPU, memory, connections) first,
        then the SLO's, each group the furthest past its limit first."""
        return constraints.broke(self.use, self.refused_requests + self.full_marks)

    def summary(self) -> FleetVerdict:
        """The verdict as the plan keeps it (an infinite or missing figure: None)."""
        return FleetVerdict(
            replicas=self.replicas,
            meets=self.meets,
            marginal=self.marginal,
            p95_ms=_finite(self.p95_ms),
            p95_ms_ci=(_finite(self.p95_ms_ci[0]), _finite(self.p95_ms_ci[1])),
            completed_share=self.completed_share,
            completed_share_ci=self.completed_share_ci,
            p50_ms=_finite(self.p50_ms),
            p95_completed_ms=_finite(self.p95_completed_ms),
            utilization=_finite(self.utilization),
            peak_replica_memory_bytes=self.peak_replica_memory_bytes,
            peak_replica_connections=self.peak_replica_connections,
            refused_requests=self.refused_requests,
            down_marks=self.down_marks,
            full_marks=self.full_marks,
            use={k: _finite(v) for k, v in self.use.items()},
            broke=tuple(self.broke()),
            replications=len(self.runs),
        )


def _finite(value: float) -> float | None:
    """A figure as the plan keeps it: None for an infinite or missing one (a p95 that is
    a miss; a mean of no runs)."""
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
    # The connections a run's busiest replica peaked at, over the runs: what one live run
    # as long as a replication's measurement sees (the most of all runs would be the peak
    # of a run several times as long). A run that turned requests away is judged by that.
    connections = round(_mean(r["peak_replica_connections"] for r in runs))
    reading = Reading(
        utilization=utilization,
        peak_memory_bytes=memory,
        peak_connections=connections,
        p95_ms=p95_ms,
        completed_share=share,
    )
    use = constraints.use_of(reading, Limits.of(request))
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
    return Limits.of(request).memory_bytes


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

"""The constraints a fleet is judged by, its use of each, and when it breaks one.

A plan judges its simulated fleets by them, and `python -m loadtest verify-plan` judges
the live runs of the same fleets by them, so that the two cannot judge differently. There
are the replica's limits and the SLO's:

- `cpu`: the replicas' mean utilisation over the CPU target;
- `memory`: the most memory any replica held over the replica's memory;
- `connections`: the most connections any replica had open (idle keep-alives, held
  streams, requests; a plan's: in one run, on the mean over its runs) over the most it
  can have open and still serve (the limit less the one a request arrives on). At 1 it
  was full for a moment; it is broken when that had consequences: work turned away, a
  request answered 503, or a replica taken out of rotation after a failed health check;
- `latency`: the p95 server latency over every call whose user answered (a failed or
  lost call is a miss, infinite) over the SLO's;
- `completion`: the share of those calls that did not complete over the share the SLO
  allows.

Each other constraint is broken when its use is past 1, or when it could not be measured
at all (a p95 with no call to take it from: nothing shows the SLO was met); a CPU or
memory reading that is missing breaks nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from labsim.model.shapes import BYTES_PER_SHAPE_GB
from labsim.study.plan_request import PlanRequest

RESOURCES = ("cpu", "memory", "connections")
#: Every constraint, the replica's limits first, then the SLO's.
CONSTRAINTS = (*RESOURCES, "latency", "completion")
#: Each constraint's short name, as tables and figures label it.
SHORT_NAMES = {
    "cpu": "cpu",
    "memory": "mem",
    "connections": "conn",
    "latency": "lat",
    "completion": "compl",
}


@dataclass(frozen=True)
class Limits:
    """What one replica may use, and what the SLO asks of the fleet's calls."""

    target_cpu_utilization: float
    memory_bytes: float
    connection_limit: int
    slo_p95_ms: float
    slo_completed_share: float

    @classmethod
    def of(cls, request: PlanRequest) -> Limits:
        """The limits a plan's request sets (a replica's memory: its shape's GB of 1,024 MiB)."""
        return cls(
            target_cpu_utilization=request.target_cpu_utilization,
            memory_bytes=request.memory_gb_per_replica * BYTES_PER_SHAPE_GB,
            connection_limit=request.connection_limit,
            slo_p95_ms=request.slo_p95_ms,
            slo_completed_share=request.slo_completed_share,
        )


@dataclass(frozen=True)
class Reading:
    """What a fleet did, in the figures it is judged by: simulated or live alike."""

    #: The replicas' mean CPU utilisation of their workers (NaN: not read).
    utilization: float
    #: The most memory one replica held (bytes).
    peak_memory_bytes: float
    #: The most connections one replica had open at once.
    peak_connections: float
    #: The p95 latency over every call whose user answered (ms; infinite: a miss).
    p95_ms: float
    #: The share of those calls that completed.
    completed_share: float


def use_of(reading: Reading, limits: Limits) -> dict[str, float]:
    """Each constraint's use of its limit (1 is the limit), in `CONSTRAINTS` order."""
    allowed_misses = 1 - limits.slo_completed_share
    misses = 1 - reading.completed_share
    return {
        "cpu": reading.utilization / limits.target_cpu_utilization,
        "memory": reading.peak_memory_bytes / limits.memory_bytes,
        "connections": reading.peak_connections / max(limits.connection_limit - 1, 1),
        "latency": reading.p95_ms / limits.slo_p95_ms,
        "completion": misses / allowed_misses if allowed_misses else (math.inf if misses else 0),
    }


def fails(constraint: str, use: Mapping[str, float], turned_away: float) -> bool:
    """Whether a fleet with this use of its limits broke `constraint`; `turned_away`
    counts its work turned away (requests refused, replicas taken out of rotation)."""
    if constraint == "connections":
        return turned_away > 0
    if constraint in RESOURCES:
        return use[constraint] > 1
    return not use[constraint] <= 1


def broke(use: Mapping[str, float], turned_away: float) -> list[str]:
    """The constraints broken: the limits (CPU, memory, connections) first, then the
    SLO's, each group the furthest past its limit first (one not measured first of all)."""
    broken = [c for c in CONSTRAINTS if fails(c, use, turned_away)]
    return sorted(broken, key=lambda c: (c not in RESOURCES, -_past(use[c])))


def _past(use: float) -> float:
    return math.inf if math.isnan(use) else use

"""The latency floor: what a call's rounds take with nothing waiting, whatever the fleet.

More replicas shorten the queues in front of the workers, never the rounds themselves: a
call that makes three requests of 20 ms of work each, and spends half a millisecond on
the wire for each, takes at least 61.5 ms however many replicas serve it. An SLO below
the p95 of that floor is met by no fleet, and a plan says so at once rather than walk
to its largest fleet.

The floor is simulated, with the same model as the plan: the request's calls on one
replica with a worker for every call (nothing queues), users who answer at once (their
time is not the server's), no health checks and no connection limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from labsim.model.params import SimParams
from labsim.model.simulation import simulate
from labsim.model.tools import requests_per_call

#: Calls simulated for the floor: enough for its p95 within a few per cent.
FLOOR_CALLS = 5000
_FLOOR_RATE_PER_S = 50.0  # any rate: nothing waits
#: An SLO this far under the floor's estimate is out of reach; one closer is simulated
#: (the estimate is a sample's p95, and a fleet's own runs judge best).
FLOOR_MARGIN = 0.1


@dataclass(frozen=True)
class LatencyFloor:
    """The p95 of a call's server latency with nothing waiting, and what makes it up."""

    p95_ms: float
    requests_per_call: float
    work_per_request_ms: float
    wire_per_request_ms: float

    def out_of_reach(self, slo_p95_ms: float) -> bool:
        """Whether no fleet can meet a p95 of `slo_p95_ms`: clearly under the floor."""
        return slo_p95_ms < self.p95_ms * (1 - FLOOR_MARGIN)

    def why(self, slo_p95_ms: float) -> str:
        """Why no fleet meets an SLO below this floor, in one sentence."""
        return (
            f"no fleet meets a p95 of {slo_p95_ms:g} ms: with nothing waiting at all, a "
            f"call's own rounds take a p95 of {self.p95_ms:.3g} ms (about "
            f"{self.requests_per_call:.2g} requests of {self.work_per_request_ms:.3g} ms of "
            f"server work and {self.wire_per_request_ms:.3g} ms on the wire each), and more "
            "replicas shorten only the queues"
        )


def latency_floor(params: SimParams, architecture: str, seed: int = 0) -> LatencyFloor:
    """The latency floor of `architecture` under `params`'s workload and replica."""
    quiet = params.with_overrides(
        replicas=1,
        workers_per_replica=FLOOR_CALLS * 2,
        connection_limit=10**7,
        health_check_interval_s=0.0,
        think_scale=0.0,
        never_answer_share=0.0,
        arrival_rate_per_s=_FLOOR_RATE_PER_S,
        rate_profile=(),
        warmup_s=0.0,
        horizon_s=FLOOR_CALLS / _FLOOR_RATE_PER_S,
        faults=(),
        autoscaler=None,
    )
    summary = simulate(quiet, architecture, seed).summary
    workload = params.workload
    requests = requests_per_call(workload.specs(), workload.tool_mix)
    return LatencyFloor(
        p95_ms=summary["p95_latency_s"] * 1e3,
        requests_per_call=requests,
        work_per_request_ms=(
            workload.request_overhead_s + workload.tool_cpu_per_call_s() / requests
        )
        * 1e3,
        wire_per_request_ms=params.cluster.network_rtt_s * 1e3,
    )

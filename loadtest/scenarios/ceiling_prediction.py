"""The simulation's ceiling: the rate at which the same replicas stop meeting the same SLO.

Beside the ceiling a swarm found (`--find-ceiling --params FILE`), labsim's planner is asked
the same question at each rate the swarm stepped through: the run's architecture and
replicas (a CPU worker of a replica one vCPU), its tool mix, the service time of a round,
its think time, and the SLO (p95 latency and the share of calls that complete). The
simulated ceiling is the last rate that met it before the first that did not. The CPU
target of a plan is left out (1.0): a ceiling is where the SLO breaks, not where a planner
would add a replica.

The service time of a round is, first, what `--predict-round-ms` says; else, on the lab's
own cluster, the replicas' busy time per round served near the knee, in the step that
broke and the two before it (their CPU time and the time they waited for a CPU other
programs held, read from the operating system as the swarm ran: what a round takes of a
replica on this machine, there); else the run's
tool work per round plus the parameter file's request overhead. The parameter file's
network delay is the simulation's time outside the replica, as the swarm's is its client,
balancer and wire.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from labsim.model import measured
from labsim.study.capacity import simulated
from labsim.study.experiments import RunSpec, run_many
from labsim.study.plan_inputs import plan_inputs
from labsim.study.plan_request import PlanRequest
from labsim.study.plan_verdict import judge
from loadtest.config import LoadTestConfig

#: Simulated seconds measured at each rate: enough calls for a p95, quick to run.
MEASURE_S = 60.0


def service_round(given_ms: float | None, found: dict[str, Any]) -> tuple[float | None, str]:
    """The service time of a round to simulate, in ms, and where it comes from: the one
    given, else the replicas' busy time per round near the knee (`found`,
    the swarm's summary), else None (the run's tool work and the request overhead)."""
    if given_ms is not None:
        return given_ms, "as given"
    measured_ms = found.get("replica_busy_ms_per_round")
    if measured_ms:
        return float(measured_ms), "the replicas' busy time per round near the knee"
    return None, "the tool work per round and the parameter file's request overhead"


def predicted_ceiling(
    params_path: str,
    config: LoadTestConfig,
    rates_per_s: list[float],
    slo_p95_ms: float,
    max_error_share: float,
    round_ms: float | None = None,
    round_from: str = "as given",
) -> dict[str, Any]:
    """The simulated ceiling among `rates_per_s` (ascending) and each rate's simulated p95
    and completed share, up to the first rate that broke the SLO. `round_ms` is the service
    time of a round on the replicas (`round_from` says where it comes from); without it,
    the run's tool work and the parameter file's request overhead."""
    arch = config.arch
    inputs = plan_inputs(measured.load(params_path), architectures=(arch,))
    base = inputs.bases[arch]
    overhead_ms = base.workload.request_overhead_s * 1e3
    tools = tuple(config.tool_mix)
    total = sum(config.tool_mix.values())
    service_ms = round_ms or config.tool_cpu_ms + overhead_ms
    rows: list[dict[str, Any]] = []
    held = None
    for rate in rates_per_s:
        request = PlanRequest(
            rate_per_s=rate,
            slo_p95_ms=slo_p95_ms,
            slo_completed_share=1 - max_error_share,
            think_time_median_s=config.think_time_median_s,
            think_time_sigma=config.think_time_sigma,
            never_answer_share=config.never_answer_share,
            tools=tools,
            tool_mix=tuple(config.tool_mix[t] / total for t in tools),
            round_cpu_ms=service_ms,
            round_cpu_cv=config.tool_cpu_cv,
            round_cpu_kind=config.tool_cpu_kind,
            answer_timeout_s=config.answer_timeout_s,
            target_cpu_utilization=1.0,
            measure_s=MEASURE_S,
        )
        if config.cpu_workers:  # a replica's CPU workers are its vCPUs; else labsim's replica
            request = dataclasses.replace(request, vcpus_per_replica=float(config.cpu_workers))
        params = simulated(request, arch, config.replicas, inputs)
        runs = run_many([RunSpec(params, arch, 0)], processes=1).to_dict("records")
        verdict = judge(request, config.replicas, runs, base.cluster.base_memory_bytes)
        meets = verdict.p95_ms <= slo_p95_ms and verdict.completed_share >= 1 - max_error_share
        rows.append(
            {
                "rate_per_s": rate,
                "p95_ms": round(verdict.p95_ms, 2),
                "completed_share": round(verdict.completed_share, 4),
                "held": meets,
            }
        )
        if not meets:
            break
        held = rate
    return {
        "predicted_ceiling_rate_per_s": held,
        "predicted_steps": rows,
        "predicted_round_ms": round(service_ms, 3),
        "predicted_round_from": round_from if round_ms else service_round(None, {})[1],
    }

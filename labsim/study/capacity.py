"""Right-sizing: the smallest fleet of each architecture that meets an SLO, and its bill.

An architect brings a workload (calls per second, the server work of a round, how long
users think, the tool mix, who never answers), a service-level objective (p95 server
latency over every call whose user answers, failed or lost calls counting as misses, and
the share of those calls that complete) and a replica shape (vCPUs and memory as AWS
Fargate sells them, a connection limit, a CPU target). For each architecture the planner

1. checks the SLO against the latency floor, what the rounds take with nothing waiting
   (`labsim.study.latency_floor`): below it no fleet meets, and the plan says so;
2. guesses from first principles how many replicas each constraint needs: CPU from the
   work per call, memory and connections from the calls held while users think
   (Little's law), latency from the waits of an M/M/c queue;
3. walks from the guess, one size at a time, simulating every size with replications
   (more where a confidence interval straddles the SLO), down while fleets meet or up
   until one does: the answer is the smallest that meets, and the one below it, which
   does not, says what breaks (`labsim.study.plan_verdict`);
4. names the binding constraint and prices the fleet per month (`labsim.model.cost`).

The question is a `PlanRequest` (`labsim.study.plan_request`), its inputs a `PlanInputs`
(`labsim.study.plan_inputs`), the answer a `Plan` (`labsim.study.plan`); the
replications of every architecture's next step run together, spread over every core.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Sequence
from typing import Any

from scipy import stats

from labsim.model.checks import ParameterError
from labsim.model.cost import SECONDS_PER_HOUR, Usage, bill
from labsim.model.demand import split_round
from labsim.model.params import SimParams
from labsim.model.shapes import Shape, smallest_sold
from labsim.model.simulation import ARCHITECTURES
from labsim.model.tools import questions_per_call, requests_per_call
from labsim.study import theory
from labsim.study.experiments import RunSpec, replication_seeds, run_many
from labsim.study.latency_floor import LatencyFloor, latency_floor
from labsim.study.plan import ArchitectureAnswer, Plan
from labsim.study.plan_inputs import PlanInputs, inputs_table, plan_inputs
from labsim.study.plan_report import notes
from labsim.study.plan_request import PlanRequest
from labsim.study.plan_tools import (
    ToolFigures,
    check_names,
    figures_for,
    measured_tools,
    tool_rows,
)
from labsim.study.plan_verdict import (
    Verdict,
    binding,
    judge,
    request_memory_bytes,
    straddles,
)
from labsim.study.plan_walk import Walk

HOURS_PER_MONTH = 730.0  # AWS's billing month: 365 days x 24 h / 12
# A peak of Poisson-like held calls sits about this many standard deviations above the mean.
PEAK_SIGMAS = 3.0


def held_s_per_question(request: PlanRequest) -> float:
    """Mean time a legacy replica holds a call for one question: E[min(think, timeout)].

    Users who never answer are held the whole timeout.
    """
    think = stats.lognorm(s=request.think_time_sigma, scale=request.think_time_median_s)
    timeout_s = request.answer_timeout_s
    # E[min(T, c)] = integral of the survival function from 0 to c.
    capped_s = float(
        sum(think.sf(timeout_s * (k + 0.5) / 400) for k in range(400)) * timeout_s / 400
    )
    answering = 1 - request.never_answer_share
    return answering * capped_s + (1 - answering) * timeout_s


def first_guess(
    request: PlanRequest, params: SimParams, architecture: str, floor_ms: float = 0.0
) -> dict[str, int]:
    """Replicas each constraint needs, from first principles (before any simulation).

    `params` is the deployment the plan simulates (any fleet size); `floor_ms` the p95
    latency with nothing waiting, which the latency guess adds queueing to.
    """
    workload, state, cluster = params.workload, params.state, params.cluster
    requests = requests_per_call(workload.specs(), workload.tool_mix)
    questions = questions_per_call(workload.specs(), workload.tool_mix)
    # The tools' own work per request, on average over the mix (each tool's own, or the
    # workload's round for a tool without).
    overhead_s, tool_s = workload.request_overhead_s, workload.tool_cpu_per_call_s() / requests
    if architecture == "mrtr":
        # Every round is a request; a round that asks seals, the retry opens.
        cpu_per_call_s = requests * (overhead_s + tool_s)
        cpu_per_call_s += (requests - 1) * (state.seal_cpu_s + state.open_cpu_s)
        held_calls = 0.0
        requests_in = requests
    else:
        # The tools/call POST and one POST per answer; the rounds run on the held stream.
        cpu_per_call_s = requests * tool_s + (1 + questions) * overhead_s
        held_calls = request.rate_per_s * questions * held_s_per_question(request)
        requests_in = 1 + questions
    busy_workers = request.rate_per_s * cpu_per_call_s / request.worker_speed
    needs = {"cpu": math.ceil(busy_workers / (request.workers * request.target_cpu_utilization))}
    # Connections besides the held streams: requests in progress and those the balancer
    # keeps open for reuse, about the requests of a keep-alive time's worth of arrivals
    # that overlap (at least one).
    request_rate = request.rate_per_s * requests_in
    in_progress = request_rate * (overhead_s + tool_s + cluster.network_rtt_s)
    room_bytes = request_memory_bytes(request) - cluster.base_memory_bytes
    rooms = {
        "memory": room_bytes / max(cluster.held_call_bytes, 1),
        # One connection stays free for the request that arrives, one for a health check.
        "connections": float(request.connection_limit - 2),
    }
    needs["memory"] = _replicas_for_peak(held_calls, rooms["memory"])
    needs["connections"] = _replicas_for_peak(held_calls + 2 * in_progress, rooms["connections"])
    needs["latency"] = _replicas_for_latency(request, request_rate, overhead_s + tool_s, floor_ms)
    return needs


def _replicas_for_peak(total: float, room: float) -> int:
    """Fewest replicas whose mean share plus a few standard deviations fits in `room`."""
    if total <= 0:
        return 1
    n = max(1, math.ceil(total / room))
    while n < 100_000 and total / n + PEAK_SIGMAS * math.sqrt(total / n) > room:
        n += 1
    return n


def _replicas_for_latency(
    request: PlanRequest, request_rate: float, work_s: float, floor_ms: float
) -> int:
    """Fewest replicas whose requests' 95th-percentile wait in an M/M/c queue (c workers,
    round-robin shares of the requests) fits between the floor and the SLO."""
    room_s = (request.slo_p95_ms - floor_ms) / 1e3
    if room_s <= 0 or work_s <= 0:
        return 1
    servers, rate = request.workers, request.worker_speed / work_s
    for n in range(1, request.max_replicas + 1):
        arrivals = request_rate / n
        if arrivals >= servers * rate:
            continue
        waiting = theory.erlang_c(servers, arrivals / rate)
        wait_s = math.log(waiting / 0.05) / (servers * rate - arrivals) if waiting > 0.05 else 0.0
        if wait_s <= room_s:
            return n
    return request.max_replicas


def sold_shape(request: PlanRequest) -> tuple[PlanRequest, str]:
    """The request on a replica shape AWS Fargate sells: as asked, or rounded up to the
    smallest sold one at least as large (and a note saying so)."""
    asked = Shape(request.vcpus_per_replica, request.memory_gb_per_replica)
    sold = smallest_sold(asked)
    if sold == asked:
        return request, ""
    rounded = dataclasses.replace(
        request, vcpus_per_replica=sold.vcpus, memory_gb_per_replica=sold.memory_gb
    )
    return rounded, f" (asked {asked}, which Fargate does not sell: rounded up)"


def plan(
    request: PlanRequest,
    inputs: PlanInputs | None = None,
    architectures: Sequence[str] = tuple(ARCHITECTURES),
    processes: int | None = None,
    progress: bool = False,
    stated: Collection[str] = (),
) -> Plan:
    """Right-size each architecture for `request`: the answer of `labsim plan` (see
    `labsim.study.plan_report` for its table). `stated` names the request's fields the
    architect stated, which the plan's inputs list as stated rather than assumed."""
    request, shape_note = sold_shape(request)
    inputs = inputs or plan_inputs(architectures=architectures)
    whole = request.whole_round(inputs.measured_round)
    measured = measured_tools(inputs.files)
    check_names(request.tools, measured, ", ".join(f.label() for f in inputs.files[1:]))
    deployments = {a: _Deployment(request, inputs, a, measured) for a in architectures}
    for a, deployment in deployments.items():
        base = deployment.base
        if base.cluster.base_memory_bytes >= request_memory_bytes(request):
            raise ParameterError(
                f"--memory-gb-per-replica {request.memory_gb_per_replica:g}: an idle {a} "
                f"replica alone takes {base.cluster.base_memory_bytes / 2**20:.0f} MiB"
            )
    floors = {a: latency_floor(d.at(1), a, request.seed) for a, d in deployments.items()}
    guesses = {
        a: first_guess(request, d.at(1), a, floors[a].p95_ms) for a, d in deployments.items()
    }
    walks = {
        a: Walk(max(guesses[a].values()), request.max_replicas)
        for a in architectures
        if not floors[a].out_of_reach(request.slo_p95_ms)
    }
    _walk_all(request, deployments, walks, processes, progress)
    answers = {
        a: _answer(request, walks.get(a), floors[a], guesses[a], deployments[a], a)
        for a in architectures
    }
    first = next(iter(deployments))
    targets = {f.name for d in deployments.values() for f in d.figures}
    return Plan(
        # The server work per round as it was resolved, stated or the parameter file's.
        request=dataclasses.replace(
            request,
            round_cpu_ms=whole.mean_s * 1e3,
            round_cpu_cv=whole.cv,
            round_cpu_kind=whole.kind,
        ),
        params=deployments[first].at(_size(walks.get(first))),
        inputs=(
            *inputs_table(request, inputs, whole, set(stated), shape_note, targets),
            *tool_rows({a: d.figures for a, d in deployments.items()}),
        ),
        notes=(
            *dict.fromkeys(n for d in deployments.values() for n in d.notes),
            *notes(shape_note, answers),
        ),
        architectures=answers,
        tools={a: d.target_tools for a, d in deployments.items() if d.target_tools},
    )


def _answer(
    request: PlanRequest,
    walk: Walk | None,
    floor: LatencyFloor,
    guess: dict[str, int],
    deployment: _Deployment,
    architecture: str,
) -> ArchitectureAnswer:
    """One architecture's answer: its fleet, what binds it, one fewer, and the bill."""
    found: dict[str, Any] = {
        "first_guess": guess,
        "latency_floor_p95_ms": floor.p95_ms,
        "base_memory_bytes": deployment.base.cluster.base_memory_bytes,
        "simulated_sizes": tuple(sorted(walk.results) if walk else ()),
    }
    if walk is None:
        return ArchitectureAnswer(**found, binding="latency", reason=floor.why(request.slo_p95_ms))
    if walk.answer is None:
        largest = walk.results[max(walk.results)]
        return ArchitectureAnswer(
            **found,
            binding=largest.broke()[0],
            reason=walk.stopped,
            largest_tried=largest.summary(),
        )
    chosen = walk.results[walk.answer]
    fewer = walk.results.get(walk.answer - 1)
    costs = monthly_cost(deployment.at(chosen.replicas), architecture, chosen)
    return ArchitectureAnswer(
        **found,
        binding=binding(chosen, fewer),
        fleet=chosen.summary(),
        cost_per_month_usd=costs["total_usd"],
        cost_breakdown=costs,
        one_fewer=None if fewer is None else fewer.summary(),
        one_fewer_reason="nothing smaller than 1 replica" if fewer is None else "",
    )


def _size(walk: Walk | None) -> int:
    """The fleet a walk answered, or a single replica when it has no answer."""
    return walk.answer if walk is not None and walk.answer is not None else 1


class _Deployment:
    """One architecture's simulated deployment at any fleet size: its parameters (the
    files and `--set`) with the request's workload, its round split into the request's
    overhead and the tool's work, and the target's tools of the mix as the files measured
    them in the era the architecture speaks."""

    def __init__(
        self,
        request: PlanRequest,
        inputs: PlanInputs,
        architecture: str,
        measured: dict[str, dict[str, ToolFigures]] | None = None,
    ) -> None:
        self.request = request
        self.base = inputs.bases[architecture]
        whole = request.whole_round(inputs.measured_round)
        self.tool, self.overhead_s = split_round(whole, self.base.workload.request_overhead_s)
        if measured is None:
            measured = measured_tools(inputs.files)
        self.figures, self.notes = figures_for(request.tools, measured, architecture)
        self.target_tools = tuple(f.tool(self.overhead_s) for f in self.figures)

    def at(self, replicas: int) -> SimParams:
        return self.request.params(
            self.base, replicas, self.tool, self.overhead_s, self.target_tools
        )


def simulated(
    request: PlanRequest,
    architecture: str,
    replicas: int = 1,
    inputs: PlanInputs | None = None,
) -> SimParams:
    """The deployment `plan` simulates for `request`: `replicas` of `architecture`, on
    the lab's measured parameters unless `inputs` says otherwise (for `first_guess`, or a
    run of one's own)."""
    inputs = inputs or plan_inputs(architectures=(architecture,))
    return _Deployment(sold_shape(request)[0], inputs, architecture).at(replicas)


def _walk_all(
    request: PlanRequest,
    deployments: dict[str, _Deployment],
    walks: dict[str, Walk],
    processes: int | None,
    progress: bool,
) -> None:
    """Step every architecture's walk together until each has its answer."""
    seeds = replication_seeds(request.seed, request.max_replications)
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    step = 0
    while pending := {a: w.next for a, w in walks.items() if w.next is not None}:
        step += 1
        specs = []
        for a, n in pending.items():
            done = len(runs.get((a, n), []))
            more = seeds[done : done + request.replications]
            specs += [RunSpec(deployments[a].at(n), a, s, (("replicas", n),)) for s in more]
        sizes = ", ".join(f"{a} {n}" for a, n in pending.items())
        rows = run_many(specs, processes, progress, f"plan step {step} ({sizes})")
        for row in rows.to_dict("records"):
            runs.setdefault((row["architecture"], int(row["replicas"])), []).append(row)
        for a, n in pending.items():
            base_memory = deployments[a].base.cluster.base_memory_bytes
            verdict = judge(request, n, runs[(a, n)], base_memory)
            if straddles(request, verdict):
                if len(verdict.runs) < request.max_replications:
                    continue  # more replications of this size next step
                verdict.marginal = True
            walks[a].record(verdict)


def monthly_cost(params: SimParams, architecture: str, verdict: Verdict) -> dict[str, float]:
    """A month of the fleet: its replicas, the store it needs, and the bytes it sends."""
    window_s = params.horizon_s - params.warmup_s
    month_s = HOURS_PER_MONTH * SECONDS_PER_HOUR
    per_s = {
        key: sum(r[key] for r in verdict.runs) / len(verdict.runs) / window_s
        for key in ("store_ops", "bytes_out")
    }
    usage = Usage(
        replica_hours=verdict.replicas * HOURS_PER_MONTH,
        store_hours=HOURS_PER_MONTH if ARCHITECTURES[architecture].uses_store else 0.0,
        store_ops=round(per_s["store_ops"] * month_s),
        egress_bytes=round(per_s["bytes_out"] * month_s),
        calls=round(params.workload.arrival_rate_per_s * month_s),
    )
    return bill(usage, params).as_dict()

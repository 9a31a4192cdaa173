"""Right-sizing: the smallest fleet of each architecture that meets an SLO, and its bill.

An architect brings a workload (calls per second, how long users think, the
tool mix, who never answers), a service-level objective (p95 server latency of
a call, the share of answered calls that complete) and a replica shape (vCPUs,
memory, a connection limit, a target CPU utilisation). For each architecture
the planner

1. guesses from first principles how many replicas each limit needs: CPU from
   the work per call, memory as a replica's base plus held calls x bytes per
   held call, open connections, the held calls from Little's law (arrival rate
   x questions x time a question is held);
2. confirms by simulation, with replications, walking from the guess to the
   smallest fleet that meets the SLO and every limit, and keeps the run one
   replica smaller to show that it does not;
3. names the constraint that binds (`cpu`, `memory`, `connections` or
   `latency`) and prices the fleet per month (`labsim.model.cost`).

The question is a `PlanRequest` (`labsim.study.plan_request`). The replications of
every architecture's next step run together, spread over every core.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy import stats

from labsim.model.cost import BYTES_PER_GB, SECONDS_PER_HOUR, Usage, bill
from labsim.model.params import SimParams
from labsim.model.simulation import ARCHITECTURES
from labsim.model.tools import questions_per_call, requests_per_call
from labsim.study.experiments import RunSpec, replication_seeds, run_many
from labsim.study.plan_request import PlanRequest

HOURS_PER_MONTH = 730.0  # AWS's billing month: 365 days x 24 h / 12
BINDINGS = ("cpu", "memory", "connections", "latency")
# A peak of Poisson-like held calls sits about this many standard deviations above the mean.
PEAK_SIGMAS = 3.0


def held_s_per_question(request: PlanRequest, answer_timeout_s: float) -> float:
    """Mean time a legacy replica holds a call for one question: E[min(think, timeout)].

    Users who never answer are held the whole timeout.
    """
    think = stats.lognorm(s=request.think_sigma, scale=request.think_median_s)
    # E[min(T, c)] = integral of the survival function from 0 to c.
    capped_s = float(
        sum(think.sf(answer_timeout_s * (k + 0.5) / 400) for k in range(400))
        * answer_timeout_s
        / 400
    )
    answering = 1 - request.never_answer_fraction
    return answering * capped_s + (1 - answering) * answer_timeout_s


def first_guess(request: PlanRequest, base: SimParams, architecture: str) -> dict[str, int]:
    """Replicas each limit needs, from first principles (before any simulation)."""
    workload, state = base.workload, base.state
    requests = requests_per_call(request.tools, request.tool_mix)
    questions = questions_per_call(request.tools, request.tool_mix)
    overhead_s, tool_s = workload.request_overhead_s, workload.round_cpu.mean_s
    if architecture == "mrtr":
        # Every round is a request; a round that asks seals, the retry opens.
        cpu_per_call_s = requests * (overhead_s + tool_s)
        cpu_per_call_s += (requests - 1) * (state.seal_cpu_s + state.open_cpu_s)
        held_calls = 0.0
    else:
        # The tools/call POST and one POST per answer; the rounds run on the held stream.
        cpu_per_call_s = requests * tool_s + (1 + questions) * overhead_s
        held_calls = (
            request.rate_per_s
            * questions
            * held_s_per_question(request, base.client.answer_timeout_s)
        )
    busy_workers = request.rate_per_s * cpu_per_call_s
    needs = {"cpu": math.ceil(busy_workers / (request.workers * request.target_cpu_utilization))}
    room_bytes = request.memory_gb_per_replica * BYTES_PER_GB - request.base_memory_bytes
    per_replica_calls = {
        "memory": room_bytes / max(base.cluster.held_call_bytes, 1),
        "connections": float(request.connection_limit - 1),
    }
    for limit, room in per_replica_calls.items():
        needs[limit] = _replicas_for_peak(held_calls, room)
    needs["latency"] = 1
    return needs


def _replicas_for_peak(total: float, room: float) -> int:
    """Fewest replicas whose mean share plus a few standard deviations fits in `room`."""
    if total <= 0:
        return 1
    n = max(1, math.ceil(total / room))
    while n < 100_000 and total / n + PEAK_SIGMAS * math.sqrt(total / n) > room:
        n += 1
    return n


@dataclass
class Evaluation:
    """A fleet size simulated with replications: what it achieved against each limit."""

    replicas: int
    p95_ms: float
    completed_share: float
    utilization: float
    peak_replica_memory_bytes: float
    peak_replica_connections: int
    ratios: dict[str, float]  # load / limit per constraint; > 1 fails
    runs: list[dict[str, Any]] = field(repr=False, default_factory=list)

    @property
    def meets(self) -> bool:
        """Whether this fleet meets the SLO and every limit."""
        return all(ratio <= 1 for ratio in self.ratios.values())

    def worst(self) -> str:
        """The constraint closest to (or furthest past) its limit."""
        return max(BINDINGS, key=lambda name: self.ratios[name])


def evaluate(request: PlanRequest, replicas: int, runs: list[dict[str, Any]]) -> Evaluation:
    """Judge the runs of one fleet size against the SLO and the replica's limits."""
    p95_ms = _mean(r["p95_latency_s"] for r in runs) * 1e3
    shares = [
        r["completed"] / (r["calls"] - r["abandoned"]) if r["calls"] > r["abandoned"] else 1.0
        for r in runs
    ]
    completed_share = _mean(shares)
    utilization = _mean(r["utilization"] for r in runs)
    memory = request.base_memory_bytes + max(r["peak_replica_held_bytes"] for r in runs)
    connections = max(r["peak_replica_connections"] for r in runs)
    missed = (1 - completed_share) / max(1 - request.slo_completed_fraction, 1e-9)
    latency = p95_ms / request.slo_p95_ms
    if completed_share < request.slo_completed_fraction:
        latency = max(latency, missed, 1.0 + 1e-9)
    ratios = {
        "cpu": utilization / request.target_cpu_utilization,
        "memory": memory / (request.memory_gb_per_replica * BYTES_PER_GB),
        # Reaching the limit means some connection was turned away.
        "connections": connections / (request.connection_limit - 0.5),
        "latency": latency if math.isfinite(latency) else math.inf,
    }
    return Evaluation(
        replicas, p95_ms, completed_share, utilization, memory, connections, ratios, runs
    )


def _mean(values: Any) -> float:
    sample = [v for v in values if v is not None and not math.isnan(v)]
    return sum(sample) / len(sample) if sample else math.inf


class _Search:
    """The walk of one architecture from its first guess to the smallest fleet that meets."""

    def __init__(self, guess: int, max_replicas: int) -> None:
        self.next: int | None = max(1, min(guess, max_replicas))
        self.max_replicas = max_replicas
        self.fails = 0  # largest size known to fail (0: none known)
        self.meets: int | None = None  # smallest size known to meet
        self.results: dict[int, Evaluation] = {}
        self._step = 1

    def record(self, result: Evaluation) -> None:
        n = result.replicas
        self.results[n] = result
        if result.meets:
            self.meets = n if self.meets is None else min(self.meets, n)
        else:
            self.fails = max(self.fails, n)
        if self.meets is None:
            if n >= self.max_replicas:
                self.next = None
                return
            self.next = min(self.max_replicas, n + self._step)
            self._step *= 2
        elif self.meets - self.fails <= 1:
            self.next = None
        elif self.meets - 1 not in self.results:
            self.next = self.meets - 1  # trust the guess: one fewer first
        else:
            self.next = (self.fails + self.meets) // 2


def plan(
    request: PlanRequest,
    base: SimParams | None = None,
    architectures: Sequence[str] = tuple(ARCHITECTURES),
    processes: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Right-size each architecture for `request`: the JSON-ready answer of `labsim plan`."""
    base = base or SimParams()
    seeds = replication_seeds(request.seed, request.replications)
    guesses = {a: first_guess(request, base, a) for a in architectures}
    searches = {a: _Search(max(g.values()), request.max_replicas) for a, g in guesses.items()}
    while pending := {a: s.next for a, s in searches.items() if s.next is not None}:
        specs = [
            RunSpec(request.params(base, n), a, seed, (("replicas", n),))
            for a, n in pending.items()
            for seed in seeds
        ]
        rows = run_many(specs, processes, progress).to_dict("records")
        for a, n in pending.items():
            runs = [r for r in rows if r["architecture"] == a and r["replicas"] == n]
            searches[a].record(evaluate(request, n, runs))
    return {
        "request": dataclasses.asdict(request),
        "architectures": {
            a: _answer(request, base, a, searches[a], guesses[a]) for a in architectures
        },
    }


def _answer(
    request: PlanRequest, base: SimParams, architecture: str, search: _Search, guess: dict
) -> dict[str, Any]:
    chosen_n = search.meets if search.meets is not None else max(search.results)
    chosen = search.results[chosen_n]
    fewer = search.results.get(chosen_n - 1)
    binding = chosen.worst()
    if fewer is not None:
        # A limit that fails one replica down binds; slow or failed calls there are its
        # consequence (refused connections are retried late), so latency binds only alone.
        failing = {k: v for k, v in fewer.ratios.items() if v > 1 and k != "latency"}
        binding = max(failing, key=failing.__getitem__) if failing else "latency"
    costs = monthly_cost(request, base, architecture, chosen)
    return {
        "replicas": chosen_n,
        "binding": binding,
        "meets_slo": chosen.meets,
        "p95_ms": chosen.p95_ms,
        "completed_share": chosen.completed_share,
        "utilization": chosen.utilization,
        "peak_replica_memory_mb": chosen.peak_replica_memory_bytes / 1e6,
        "peak_replica_connections": chosen.peak_replica_connections,
        "ratios": chosen.ratios,
        "cost_per_month_usd": costs["total_usd"],
        "cost_breakdown": costs,
        "first_guess": guess,
        "simulated_sizes": sorted(search.results),
        "one_fewer": {
            "replicas": chosen_n - 1,
            "meets_slo": bool(fewer.meets) if fewer is not None else False,
            "p95_ms": fewer.p95_ms if fewer is not None else None,
            "ratios": fewer.ratios if fewer is not None else None,
        },
    }


def monthly_cost(
    request: PlanRequest, base: SimParams, architecture: str, result: Evaluation
) -> dict[str, float]:
    """A month of the fleet: its replicas, the store it needs, and the bytes it sends."""
    params = request.params(base, result.replicas)
    window_s = params.horizon_s - params.warmup_s
    month_s = HOURS_PER_MONTH * SECONDS_PER_HOUR
    per_s = {
        key: _mean(r[key] / window_s for r in result.runs) for key in ("store_ops", "bytes_out")
    }
    usage = Usage(
        replica_hours=result.replicas * HOURS_PER_MONTH,
        store_hours=HOURS_PER_MONTH if ARCHITECTURES[architecture].uses_store else 0.0,
        store_ops=round(per_s["store_ops"] * month_s),
        egress_bytes=round(per_s["bytes_out"] * month_s),
        calls=round(request.rate_per_s * month_s),
    )
    return bill(usage, params).as_dict()


def plan_table(answer: dict[str, Any]) -> str:
    """The plan as a readable table, one column per architecture."""
    rows: dict[str, dict[str, str]] = {}
    for name, a in answer["architectures"].items():
        breakdown = a["cost_breakdown"]
        fewer = a["one_fewer"]
        rows[name] = {
            "replicas": str(a["replicas"]),
            "binding constraint": a["binding"],
            "meets SLO and limits": "yes" if a["meets_slo"] else "NO",
            "p95 server latency (ms)": f"{a['p95_ms']:.1f}",
            "completed (of answered)": f"{a['completed_share']:.4f}",
            "CPU utilisation": f"{a['utilization']:.2f}",
            "peak memory per replica (MB)": f"{a['peak_replica_memory_mb']:.0f}",
            "peak connections per replica": str(a["peak_replica_connections"]),
            "first guess (cpu/mem/conn)": "{cpu}/{memory}/{connections}".format(**a["first_guess"]),
            "one fewer: replicas": str(fewer["replicas"]),
            "one fewer: meets": "yes" if fewer["meets_slo"] else "no",
            "cost per month (USD)": f"{a['cost_per_month_usd']:,.2f}",
            "  replicas": f"{breakdown['replicas_usd']:,.2f}",
            "  store": f"{breakdown['store_usd']:,.2f}",
            "  egress": f"{breakdown['egress_usd']:,.2f}",
        }
    names = list(rows)
    labels = list(next(iter(rows.values())))
    width = max(len(label) for label in labels)
    lines = [" " * width + "".join(f"{n:>14s}" for n in names)]
    lines += [
        label.ljust(width) + "".join(f"{rows[n][label]:>14s}" for n in names) for label in labels
    ]
    return "\n".join(lines)

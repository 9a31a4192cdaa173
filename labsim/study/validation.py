"""The simulation checked against queueing theory.

Each case is a deployment where theory has an answer: no questions to the
user, no request overhead, exponential service times, so the cluster reduces
to textbook queues. The same model code that runs the three architectures
runs them (MRTR with tools that ask nothing), so agreement here vouches for
the queues, the load balancers and the bookkeeping the comparisons rely on.

A case passes when the theoretical value lies inside the simulation's
confidence interval, widened by the case's stated tolerance for results that
are limits (Mitzenmacher's formula holds as the number of replicas grows).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from labsim.model.demand import ClientParams, ServiceTime, WorkloadParams
from labsim.model.deployment import ClusterParams, StateParams
from labsim.model.params import SimParams
from labsim.study import theory
from labsim.study.experiments import RunSpec, confidence_interval, replication_seeds, run_many
from labsim.study.scenarios import build


def queueing_params(
    arrival_rate_per_s: float,
    service_rate_per_s: float,
    calls: int,
    replicas: int = 1,
    workers_per_replica: int = 1,
    lb_policy: str = "round-robin",
    connection_limit: int = 1_000_000,
    warmup_fraction: float = 0.1,
) -> SimParams:
    """A deployment that is a textbook queue: Poisson arrivals, exponential service, no questions.

    About `calls` calls arrive; the first `warmup_fraction` of the time is
    discarded. Turned-away calls are not retried, so a connection limit makes
    an M/M/c/K loss system: room for `connection_limit` calls at once. The balancer is
    the textbook's: no health checks take a busy replica out of rotation, and no
    connection is kept open between requests.
    """
    horizon_s = calls / arrival_rate_per_s
    return SimParams(
        workload=WorkloadParams(
            arrival_rate_per_s=arrival_rate_per_s,
            tool_mix=(1.0, 0.0, 0.0),
            round_cpu=ServiceTime(mean_s=1.0 / service_rate_per_s, kind="exponential"),
            request_overhead_s=0.0,
            never_answer_share=0.0,
        ),
        client=ClientParams(max_retries=0),
        cluster=ClusterParams(
            replicas=replicas,
            workers_per_replica=workers_per_replica,
            # The server serves a request while the open connections, its own counted, are
            # fewer than its limit: room for K calls is a limit of K + 1.
            connection_limit=connection_limit + 1,
            lb_policy=lb_policy,
            keepalive_idle_s=0.0,
            health_check_interval_s=0.0,
        ),
        state=StateParams(seal_cpu_s=0.0, open_cpu_s=0.0),
        horizon_s=horizon_s,
        warmup_s=warmup_fraction * horizon_s,
        sample_every_s=horizon_s / 20,
    )


@dataclass(frozen=True)
class Case:
    """One comparison of simulation and theory: a deployment, a metric and its theoretical value."""

    name: str
    description: str
    params: SimParams
    metric: str  # a key of the run summary
    theory: float
    tolerance: float = 0.0  # relative slack for limit results (0: theory is exact)
    architecture: str = "mrtr"


@dataclass(frozen=True)
class Verdict:
    """A case's outcome: the simulated mean, its interval, theory, and whether they agree."""

    case: Case
    mean: float
    ci_half_width: float
    replications: int

    @property
    def passed(self) -> bool:
        """Theory lies within the confidence interval, widened by the case's tolerance."""
        slack = self.ci_half_width + self.case.tolerance * abs(self.case.theory)
        return math.isfinite(self.mean) and abs(self.mean - self.case.theory) <= slack


def mmc_case(rho: float, servers: int, calls: int) -> Case:
    """M/M/c at utilization rho: mean time in queue against Erlang C."""
    arrival = rho * servers
    return Case(
        f"M/M/{servers} Erlang C, rho={rho:g}",
        f"{servers} workers, one queue: mean wait",
        queueing_params(arrival, 1.0, calls, workers_per_replica=servers),
        "mean_queue_wait_s",
        theory.mmc_mean_wait_s(arrival, 1.0, servers),
    )


def mmck_case(rho: float, servers: int, capacity: int, calls: int) -> Case:
    """M/M/c/K: the share of calls turned away at the connection limit."""
    arrival = rho * servers
    return Case(
        f"M/M/{servers}/{capacity} blocking, rho={rho:g}",
        f"{servers} workers, room for {capacity}: blocked share",
        queueing_params(
            arrival, 1.0, calls, workers_per_replica=servers, connection_limit=capacity
        ),
        "failed_fraction",
        theory.mmck_blocking_probability(arrival, 1.0, servers, capacity),
    )


def routing_case(policy: str, rho: float, replicas: int, calls: int) -> Case:
    """N single-worker replicas behind a balancer: mean time in system against theory."""
    arrival = rho * replicas
    expected: dict[str, Callable[[float, float, int], float]] = {
        "random": theory.random_routing_mean_response_s,
        "round-robin": theory.round_robin_mean_response_s,
        "power-of-two": theory.power_of_d_mean_response_s,
    }
    description = {
        "random": "random routing = M/M/1 per replica",
        "round-robin": "round-robin = E_N/M/1 per replica",
        "power-of-two": "power of two choices = Mitzenmacher's fixed point",
    }
    return Case(
        f"{policy} routing, {replicas} replicas, rho={rho:g}",
        description[policy],
        queueing_params(arrival, 1.0, calls, replicas=replicas, lb_policy=policy),
        "mean_time_in_system_s",
        expected[policy](arrival, 1.0, replicas),
        # Mitzenmacher's result is the limit of many replicas; at 100 it is within ~2%.
        tolerance=0.03 if policy == "power-of-two" else 0.0,
    )


def littles_law_case(scenario: str = "steady") -> Case:
    """Little's law on a full scenario: L measured by the simulation over lambda W."""
    return Case(
        f"Little's law, {scenario}",
        "calls in flight (time average) / (arrival rate x mean time in system)",
        build(scenario),
        "littles_law_ratio",
        1.0,
        # Calls straddling the ends of a finite window blur the law by a percent or so.
        tolerance=0.02,
        architecture="sse-store",
    )


def standard_cases(scale: float = 1.0) -> list[Case]:
    """The cases `python -m labsim validate` runs; `scale` multiplies their call counts."""

    def n(calls: int) -> int:
        return max(1_000, int(calls * scale))

    return [
        mmc_case(0.8, 1, n(40_000)),
        mmc_case(0.9, 2, n(60_000)),
        mmc_case(0.9, 4, n(60_000)),
        mmck_case(0.9, 2, 5, n(30_000)),
        routing_case("random", 0.7, 4, n(40_000)),
        routing_case("round-robin", 0.7, 4, n(40_000)),
        routing_case("power-of-two", 0.9, 100, n(60_000)),
        littles_law_case("steady"),
    ]


def validate(
    cases: Sequence[Case],
    replications: int = 5,
    seed: int = 2026,
    level: float = 0.99,
    processes: int | None = None,
    progress: bool = False,
) -> list[Verdict]:
    """Run every case `replications` times; a verdict per case."""
    seeds = replication_seeds(seed, replications)
    # Cases that differ only in the metric they read share their runs.
    deployments = list(dict.fromkeys((case.params, case.architecture) for case in cases))
    specs = [
        RunSpec(params, architecture, s, (("deployment", k),))
        for k, (params, architecture) in enumerate(deployments)
        for s in seeds
    ]
    runs = run_many(specs, processes, progress)
    verdicts = []
    for case in cases:
        k = deployments.index((case.params, case.architecture))
        values = runs.loc[runs["deployment"] == k, case.metric]
        mean, half_width = confidence_interval(values, level)
        verdicts.append(Verdict(case, mean, half_width, len(values)))
    return verdicts


def verdict_table(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """Verdicts as a table: case, metric, theory, simulated mean and interval, pass."""
    return pd.DataFrame(
        [
            {
                "case": v.case.name,
                "metric": v.case.metric,
                "theory": v.case.theory,
                "simulated": v.mean,
                "ci_half_width": v.ci_half_width,
                "tolerance": v.case.tolerance,
                "passed": v.passed,
            }
            for v in verdicts
        ]
    )

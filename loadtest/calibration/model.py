"""labsim's side of the calibration: the simulated twin of a live load level or upgrade.

Every number the simulation gets is one the live run measured or was configured with:
the replica's service time per round (its mean from the process's CPU time and wait for
a CPU, its spread timed round by round on the replica), the per-round delay
outside the replica (fitted on a low-load probe), the offered rate, the tool (`quote`:
one question, two rounds), the users' think time, the drain timeout and the time a
replaced replica takes to come back. A live replica is one uvicorn process on one core,
so a simulated replica has one worker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labsim import simulate
from labsim.model.demand import ServiceTime
from labsim.model.faults import RollingUpgrade
from labsim.model.params import SimParams

#: Simulated calls per level, enough for a steady 95th percentile.
CALLS_PER_LEVEL = 12_000
#: Simulations per live run, by seed. With one seed every twin drew the same arrivals: its
#: Poisson count of calls came out 1.3% above the rate asked, in every run, so every twin
#: was that much busier than the run it stood for (a p95 near saturation moves ~5% by it).
SEEDS_PER_LEVEL = 4


@dataclass(frozen=True)
class LiveInputs:
    """What the live runs measured and were configured with, for the simulation."""

    round_cpu_s: float
    #: Spread (std / mean) of the replica's service time per round, measured round by
    #: round on the replica (`loadtest/probes/service_spread.py`).
    round_cpu_cv: float
    network_s: float
    network_cv: float
    think_time_median_s: float
    think_time_sigma: float
    held_call_bytes: int
    max_restarts: int


def base_params(inputs: LiveInputs, replicas: int = 1) -> SimParams:
    """SimParams for the calibration's workload on `replicas` one-worker replicas."""
    return SimParams().with_overrides(
        replicas=replicas,
        workers_per_replica=1,
        tool_mix=(0.0, 1.0, 0.0),  # quote: one question, two rounds
        round_cpu=ServiceTime(mean_s=inputs.round_cpu_s, kind="lognormal", cv=inputs.round_cpu_cv),
        # The fitted CPU per round already holds the request's overhead and any sealing.
        request_overhead_s=0.0,
        seal_cpu_s=0.0,
        open_cpu_s=0.0,
        network_rtt_s=inputs.network_s,
        network_rtt_cv=inputs.network_cv,
        think_time_median_s=inputs.think_time_median_s,
        think_time_sigma=inputs.think_time_sigma,
        never_answer_share=0.0,
        held_call_bytes=inputs.held_call_bytes,
        max_call_restarts=inputs.max_restarts,
        reconnect_delay_s=0.05,  # the load test's client: 50 ms, doubling
        cut_noticed_on_answer=True,  # the load test's client reads its stream between answers
    )


def predict_level(
    inputs: LiveInputs,
    arch: str,
    rate_per_s: float,
    *,
    seeds: int = SEEDS_PER_LEVEL,
    calls: int = CALLS_PER_LEVEL,
) -> dict[str, float]:
    """labsim's throughput, latency, utilisation and held memory at one offered rate: the
    means over `seeds` simulations (seeds 1, 2, ...), each of about `calls` calls."""
    keys = ("throughput_per_s", "p50_ms", "p95_ms", "utilization", "held_memory_bytes")
    if not rate_per_s > 0:  # a level that offered nothing (a starved load generator)
        return dict.fromkeys(keys, float("nan"))
    horizon_s = max(30.0, calls / rate_per_s)
    params = base_params(inputs).with_overrides(
        arrival_rate_per_s=rate_per_s, horizon_s=horizon_s, warmup_s=min(5.0, horizon_s / 4)
    )
    runs = []
    for seed in range(1, seeds + 1):
        summary = simulate(params, arch, seed=seed).summary
        runs.append(
            {
                "throughput_per_s": summary["goodput_per_s"],
                "p50_ms": summary["p50_latency_s"] * 1e3,
                "p95_ms": summary["p95_latency_s"] * 1e3,
                "utilization": summary["utilization"],
                "held_memory_bytes": summary["mean_held_bytes"],
            }
        )
    return {key: float(np.mean([run[key] for run in runs])) for key in keys}


def predict_upgrade(
    inputs: LiveInputs,
    arch: str,
    *,
    replicas: int,
    rate_per_s: float,
    duration_s: float,
    upgrade_at_s: float,
    drain_timeout_s: float,
    restart_s: float,
    calls_per_session: float = 1.0,
    seeds: int = 5,
) -> dict[str, float]:
    """Lost calls and re-prompts of a simulated rolling upgrade, mean over seeds.

    A live user is one session for the whole run (one sticky cookie), so the simulated
    sessions last `duration_s` and hold `calls_per_session` calls.
    """
    upgrade = RollingUpgrade(
        at_s=upgrade_at_s, drain_timeout_s=drain_timeout_s, restart_s=restart_s
    )
    params = base_params(inputs, replicas).with_overrides(
        arrival_rate_per_s=rate_per_s,
        horizon_s=duration_s,
        warmup_s=0.0,
        faults=(upgrade,),
        calls_per_session=max(1.0, calls_per_session),
        session_s=duration_s,
    )
    runs = [simulate(params, arch, seed=seed).summary for seed in range(1, seeds + 1)]
    return {
        key: float(np.mean([run[key] for run in runs]))
        for key in ("calls", "completed", "lost", "re_prompts", "restarts", "retries")
    }


def network_delay(call_delays_s: list[float], rounds: int = 2) -> tuple[float, float]:
    """Mean and cv of a per-round lognormal delay whose sum over `rounds` rounds has the
    measured median and 95th percentile (what a call took beyond the replica's CPU).

    The spread is found by bisection on the shape (a sum of lognormals has no closed
    form; its quantiles come from a fixed sample), then the scale matches the median.
    """
    delays = np.asarray([d for d in call_delays_s if d > 0])
    if len(delays) < 10:
        return 0.0, 0.0
    median, p95 = np.quantile(delays, [0.5, 0.95])
    target = p95 / median
    normals = np.random.default_rng(0).standard_normal((20_000, rounds))

    def ratio(sigma: float) -> float:
        sums = np.exp(sigma * normals).sum(axis=1)
        return float(np.quantile(sums, 0.95) / np.quantile(sums, 0.5))

    low, high = 0.0, 3.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if ratio(mid) < target else (low, mid)
    sigma = (low + high) / 2
    sums = np.exp(sigma * normals).sum(axis=1)
    scale = median / float(np.quantile(sums, 0.5))  # per-round median
    return float(scale * math.exp(sigma**2 / 2)), math.sqrt(math.expm1(sigma**2))


def delay_outside(
    call_latencies_ms: list[float], round_service_s: float, rounds: int = 2
) -> tuple[float, float]:
    """Mean and cv of the per-round delay outside the replica (client, balancer, wire):
    what calls of `rounds` rounds took beyond `rounds` times the service of a round."""
    delays = [ms / 1e3 - rounds * round_service_s for ms in call_latencies_ms]
    return network_delay(delays, rounds)

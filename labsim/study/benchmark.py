"""How fast the models run, measured against a bare SimPy loop of the same queueing.

The yardstick is what a plain SimPy program of the same queueing network
costs: the same calls (the model run's own arrival times, CPU and think-time
draws), the same stations (one `simpy.Resource` per replica, with the
replica's workers, dealt round-robin as the default load balancer does) and
the same number of service steps per call as the model run served. Each step
crosses the network (the same lognormal delay, when the model has one), queues
for a worker, holds it for the request's CPU and lets go; between steps the
user thinks, as many times in all as the model's users did. What the bare loop
leaves out is what the model adds: the protocol's rounds and answers, routing
policies, shedding, faults, gauges and the per-call results. Every random draw
of the bare loop is made before its clock starts, as the model draws its
workload before its run.

Running both on the same machine, alternated pass by pass, turns a noisy
wall-clock time into a ratio: how much the model's own Python costs per
simulated call on top of SimPy's.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Generator, Sequence

import numpy as np
import pandas as pd
import simpy

from labsim.model.params import SimParams
from labsim.model.simulation import ARCHITECTURES, Simulation


def events_scheduled(env: simpy.Environment) -> int:
    """How many events `env` has scheduled so far (SimPy numbers them as it goes)."""
    return next(env._eid)  # SimPy's event counter; reading it advances it by one


def spread(total: int, parts: int) -> list[int]:
    """`total` split over `parts` as evenly as whole numbers allow (they sum to `total`)."""
    return [(k + 1) * total // parts - k * total // parts for k in range(parts)]


def bare_loop(simulation: Simulation, requests: int, waits: int) -> tuple[int, float]:
    """Serve the calls of `simulation`'s workload in bare SimPy; returns (events, wall seconds).

    `requests` service steps and `waits` think waits, as a model run made
    them, are spread evenly over the calls; a call makes its first request,
    waits for its user, then makes the rest. Service time is the request
    overhead plus the call's drawn CPU, a think wait the call's drawn think
    time (at most the answer timeout, after which the model gives up too).
    """
    params = simulation.params
    cluster = params.cluster
    workload = simulation.workload
    calls = len(workload)
    steps = spread(requests, calls)
    pauses = spread(waits, calls)
    last = workload.cpu_s.shape[1] - 1
    service = (params.workload.request_overhead_s + workload.cpu_s).tolist()
    think = np.minimum(workload.think_s, params.client.answer_timeout_s).tolist()
    if cluster.network_rtt_s:
        sigma = math.sqrt(math.log1p(cluster.network_rtt_cv**2))
        mu = math.log(cluster.network_rtt_s) - sigma**2 / 2
        rng = np.random.default_rng(simulation.seed)
        delays = iter(rng.lognormal(mu, sigma, requests).tolist())
    else:
        delays = itertools.repeat(0.0)
    arrivals = workload.arrival_s.tolist()

    env = simpy.Environment()
    stations = [
        simpy.Resource(env, capacity=cluster.workers_per_replica) for _ in range(cluster.replicas)
    ]
    dealer = itertools.cycle(stations)

    def call(i: int) -> Generator[simpy.Event, object, None]:
        cpu, thinks = service[i], think[i]
        for k in range(steps[i]):
            delay = next(delays)
            if delay:
                yield env.timeout(delay)
            with next(dealer).request() as request:
                yield request
                yield env.timeout(cpu[k if k < last else last])
            if k == 0:
                for j in range(pauses[i]):
                    yield env.timeout(thinks[j if j < last else last])

    def source() -> Generator[simpy.Event, object, None]:
        for i, arrival_s in enumerate(arrivals):
            yield env.timeout(arrival_s - env.now)
            env.process(call(i))

    env.process(source())
    started = time.perf_counter()
    env.run()
    return events_scheduled(env), time.perf_counter() - started


def bench(
    params: SimParams | None = None,
    architectures: Sequence[str] = tuple(ARCHITECTURES),
    repeats: int = 3,
    seed: int = 0,
) -> pd.DataFrame:
    """Simulated calls per wall-second per architecture, against the bare loop.

    Each pass runs the model (the whole `run`, results included), then the
    bare loop of the same calls with as many requests and think waits as the
    model made. `slowdown` is the model's wall time over the bare loop's, the
    median over `repeats` passes (`slowdown_min`, `slowdown_max`: the
    spread); 1 means the model's rounds, users, routing and results cost
    nothing on top of SimPy queueing. `slowdown_per_event` compares the cost
    of one SimPy event in each.
    """
    params = params or SimParams(horizon_s=3600.0)
    rows = []
    for architecture in architectures:
        ratios, model_times, bare_times = [], [], []
        for _ in range(repeats):
            simulation = Simulation(params, architecture, seed)
            started = time.perf_counter()
            simulation.run()
            model_times.append(time.perf_counter() - started)
            events = events_scheduled(simulation.env)
            model = simulation.architecture
            bare_events, bare_s = bare_loop(simulation, model.requests, model.waits)
            bare_times.append(bare_s)
            ratios.append(model_times[-1] / bare_s)
        model_s, bare_s = statistics.median(model_times), statistics.median(bare_times)
        calls = len(simulation.workload)
        rows.append(
            {
                "architecture": architecture,
                "calls": calls,
                "requests": model.requests,
                "waits": model.waits,
                "events": events,
                "bare_events": bare_events,
                "wall_s": model_s,
                "calls_per_s": calls / model_s,
                "bare_wall_s": bare_s,
                "bare_calls_per_s": calls / bare_s,
                "slowdown": statistics.median(ratios),
                "slowdown_min": min(ratios),
                "slowdown_max": max(ratios),
                "slowdown_per_event": (model_s / events) / (bare_s / bare_events),
            }
        )
    return pd.DataFrame(rows)


def report(horizon_s: float, repeats: int, seed: int) -> str:
    """The table `labsim bench` prints, and the worst slowdown, on the steady scenario."""
    # The steady scenario's warm-up, shortened for short benchmark horizons.
    params = SimParams(horizon_s=horizon_s, warmup_s=min(300.0, horizon_s / 3))
    table = bench(params, repeats=repeats, seed=seed)
    lines = [
        f"steady scenario, {horizon_s:g} simulated s, median of {repeats} passes.",
        "slowdown = model wall time / wall time of a bare SimPy loop of the same calls, "
        "stations, requests and think waits (min and max over the passes beside it)",
        "",
        table.to_string(index=False, float_format=lambda v: f"{v:,.2f}", line_width=250),
        "",
        f"worst slowdown against the bare SimPy loop: {table['slowdown'].max():.2f}x "
        "(target: within 1.5x)",
    ]
    return "\n".join(lines)

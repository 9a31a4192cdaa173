"""How fast the models run, measured against a bare SimPy M/M/c loop.

The yardstick is the cheapest meaningful SimPy program: a source process
starting one process per job, each taking a worker, holding it for an
exponential time and letting go. Running it for the same number of SimPy
events as a model run, on the same machine at the same moment, turns a noisy
wall-clock time into a ratio: how much the model's own Python costs per event
on top of SimPy's.
"""

from __future__ import annotations

import random
import time
from collections.abc import Generator, Sequence

import pandas as pd
import simpy

from labsim.params import SimParams
from labsim.simulation import ARCHITECTURES, Simulation

# The bare loop schedules six events per job: arrival timeout, process start,
# request, service timeout, release, process end.
BARE_EVENTS_PER_JOB = 6


def events_scheduled(env: simpy.Environment) -> int:
    """How many events `env` has scheduled so far (SimPy numbers them as it goes)."""
    return next(env._eid)  # SimPy's event counter; reading it advances it by one


def bare_mmc_loop(
    jobs: int, servers: int = 8, arrival_rate: float = 7.2, service_rate: float = 1.0, seed: int = 0
) -> tuple[int, float]:
    """Run a bare M/M/c loop of `jobs` jobs; returns (events scheduled, wall seconds)."""
    env = simpy.Environment()
    workers = simpy.Resource(env, capacity=servers)
    draw = random.Random(seed).expovariate

    def job() -> Generator[simpy.Event, object, None]:
        request = workers.request()
        yield request
        yield env.timeout(draw(service_rate))
        workers.release(request)

    def source() -> Generator[simpy.Event, object, None]:
        for _ in range(jobs):
            yield env.timeout(draw(arrival_rate))
            env.process(job())

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

    For each architecture: run the model (whole `simulate`, results included),
    count its requests (each queues for a worker once) and its events, run the
    bare loop with one job per request (the same queueing), and keep the best
    of `repeats` of each. `slowdown` is the model's wall time over the bare
    loop's for the same requests: 1 means the model's calls, rounds, users and
    routing cost nothing on top of SimPy queueing. `slowdown_per_event` compares
    the same number of events instead.
    """
    params = params or SimParams(horizon_s=3600.0)
    rows = []
    for architecture in architectures:
        best_model_s = best_bare_s = float("inf")
        events = calls = requests = bare_events = 0
        for _ in range(repeats):
            simulation = Simulation(params, architecture, seed)
            started = time.perf_counter()
            simulation.run()
            best_model_s = min(best_model_s, time.perf_counter() - started)
            events = events_scheduled(simulation.env)
            calls = len(simulation.workload)
            requests = simulation.architecture.requests
            bare_events, bare_s = bare_mmc_loop(requests, seed=seed)
            best_bare_s = min(best_bare_s, bare_s)
        bare_jobs_per_s = requests / best_bare_s
        rows.append(
            {
                "architecture": architecture,
                "calls": calls,
                "requests": requests,
                "events": events,
                "wall_s": best_model_s,
                "calls_per_s": calls / best_model_s,
                "requests_per_s": requests / best_model_s,
                "bare_wall_s": best_bare_s,
                "bare_jobs_per_s": bare_jobs_per_s,
                "slowdown": best_model_s / best_bare_s,
                "slowdown_per_event": (best_model_s / events) / (best_bare_s / bare_events),
            }
        )
    return pd.DataFrame(rows)

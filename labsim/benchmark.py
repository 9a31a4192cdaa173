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
    count its events, run the bare loop for the same number of events, and
    keep the best of `repeats` of each. `slowdown` is the model's wall time
    over the bare loop's for the same number of events: 1 means the model
    costs nothing on top of SimPy.
    """
    params = params or SimParams(horizon_s=3600.0)
    rows = []
    for architecture in architectures:
        best_model_s = best_bare_s = float("inf")
        events = calls = bare_events = 0
        for _ in range(repeats):
            simulation = Simulation(params, architecture, seed)
            started = time.perf_counter()
            simulation.run()
            best_model_s = min(best_model_s, time.perf_counter() - started)
            events = events_scheduled(simulation.env)
            calls = len(simulation.workload)
            bare_events, bare_s = bare_mmc_loop(events // BARE_EVENTS_PER_JOB, seed=seed)
            best_bare_s = min(best_bare_s, bare_s)
        # The bare loop's time for exactly the model's event count.
        bare_wall_s = best_bare_s * events / bare_events
        rows.append(
            {
                "architecture": architecture,
                "calls": calls,
                "events": events,
                "wall_s": best_model_s,
                "calls_per_s": calls / best_model_s,
                "events_per_s": events / best_model_s,
                "bare_wall_s": bare_wall_s,
                "bare_jobs_per_s": bare_events / BARE_EVENTS_PER_JOB / best_bare_s,
                "bare_events_per_s": bare_events / best_bare_s,
                "slowdown": best_model_s / bare_wall_s,
            }
        )
    return pd.DataFrame(rows)

"""`labsim bench`: the bare SimPy loop serves the model run's calls, requests and think waits."""

from __future__ import annotations

import pytest

from labsim.cli.bench import plan_timing
from labsim.model.params import SimParams
from labsim.model.simulation import Simulation
from labsim.study.benchmark import bare_loop, events_scheduled, report, spread
from labsim.study.plan_request import PlanRequest


@pytest.mark.parametrize(("total", "parts"), [(0, 3), (7, 3), (42008, 28831), (5, 9)])
def test_spread_is_even_and_keeps_the_total(total: int, parts: int) -> None:
    shares = spread(total, parts)
    assert len(shares) == parts
    assert sum(shares) == total
    assert max(shares) - min(shares) <= 1


@pytest.mark.parametrize("rtt_s", [0.0, 0.002])
def test_bare_loop_schedules_the_events_of_the_same_queueing(rtt_s: float) -> None:
    params = SimParams(horizon_s=120.0, warmup_s=0.0).with_overrides(network_rtt_s=rtt_s)
    simulation = Simulation(params, "mrtr", 0)
    simulation.run()
    model = simulation.architecture
    calls = len(simulation.workload)
    events, wall_s = bare_loop(simulation, model.requests, model.waits)
    # Per call: its arrival timeout, its process starting and ending; per request: the
    # network delay (if any), taking a worker, the service, letting go; per wait: one
    # timeout. The source process starts and ends once.
    per_request = 4 if rtt_s else 3
    assert events == 2 + 3 * calls + per_request * model.requests + model.waits
    assert wall_s > 0
    assert model.requests > calls and model.waits > 0
    assert events_scheduled(simulation.env) > 0


@pytest.mark.slow
def test_report_prints_every_model_and_the_time_plan_takes() -> None:
    printed = report(90.0, 2, 0)
    for architecture in ("sse-store", "sticky", "mrtr"):
        assert architecture in printed
    assert "slowdown_min" in printed and "slowdown_max" in printed
    request = PlanRequest(
        rate_per_s=2.0,
        think_time_median_s=10.0,
        slo_p95_ms=250.0,
        memory_gb_per_replica=4.0,
        connection_limit=1024,
        replications=1,
        measure_s=30.0,
    )
    assert plan_timing(request).startswith("labsim plan, default settings, every core:")

"""The simulation's ceiling beside a swarm's: labsim's planner asked, rate by rate, whether
the same replicas meet the same SLO, with the service time of a round the swarm's steps
read on the replicas."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from labsim.model.measured import DEFAULT_PATH
from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.scenarios.ceiling_prediction import predicted_ceiling, service_round
from loadtest.swarm.plan import SwarmPlan
from loadtest.swarm.rate_ceiling import (
    CeilingSearch,
    RateSteps,
    ReplicaTime,
    ceiling,
    ceiling_lines,
    ceiling_search,
)

RATES = [float(k) for k in range(1, 21)]


def ceiling_for(round_ms: float, replicas: int = 1) -> dict:
    config = LoadTestConfig(
        replicas=replicas, tool_mix={"crunch": 1.0}, rate_per_s=1.0, cpu_workers=1
    )
    # An SLO of five rounds: time scales with the round, so the ceiling scales against it.
    return predicted_ceiling(str(DEFAULT_PATH), config, RATES, 5 * round_ms, 0.01, round_ms)


@pytest.mark.slow
def test_one_worker_meets_the_slo_below_what_it_serves_and_stops_after() -> None:
    found = ceiling_for(100.0)  # one worker serves 10 calls/s at most
    rate = found["predicted_ceiling_rate_per_s"]
    assert rate is not None and 5 <= rate < 10
    steps = found["predicted_steps"]
    assert [s["held"] for s in steps] == [True] * (len(steps) - 1) + [False]
    assert steps[-1]["rate_per_s"] == rate + 1 and steps[-1]["p95_ms"] > 500


@pytest.mark.slow
def test_a_shape_of_the_rounds_tool_is_predicted_by_its_rounds() -> None:
    """`rounds/3x1` (three rounds a call) against `rounds/1x1` (one): with the same round
    and an SLO of as many of its rounds, the ceiling falls about threefold."""

    def ceiling_of(tool: str, slo_ms: float) -> float:
        config = LoadTestConfig(replicas=1, tool_mix={tool: 1.0}, rate_per_s=1.0, cpu_workers=1)
        found = predicted_ceiling(str(DEFAULT_PATH), config, RATES, slo_ms, 0.01, 50.0)
        return found["predicted_ceiling_rate_per_s"]

    one, three = ceiling_of("rounds/1x1", 250.0), ceiling_of("rounds/3x1", 750.0)
    assert one is not None and three is not None
    assert 5 <= one < 20 and three == pytest.approx(one / 3, abs=1.5), (one, three)


@pytest.mark.slow
def test_a_round_twice_as_long_halves_the_ceiling() -> None:
    """Against an SLO of as many rounds."""
    one = ceiling_for(100.0)["predicted_ceiling_rate_per_s"]
    assert ceiling_for(200.0)["predicted_ceiling_rate_per_s"] == pytest.approx(one / 2, abs=1)


@pytest.mark.slow
def test_a_second_replica_at_least_doubles_the_ceiling_below_what_both_serve() -> None:
    """Two replicas share their queue's ups and downs: more than twice one's ceiling."""
    one = ceiling_for(100.0)["predicted_ceiling_rate_per_s"]
    two = ceiling_for(100.0, replicas=2)["predicted_ceiling_rate_per_s"]
    assert 2 * one - 1 <= two < 20


SEARCH = CeilingSearch(
    rate_step_per_s=10.0, step_s=4.0, max_steps=3, slo_p95_ms=100.0, max_error_share=0.01
)


def served(t0: float, rate_per_s: float, latency_ms: float) -> list[dict[str, Any]]:
    """A step's calls of one round each, at `rate_per_s` from `t0`."""
    n = round(rate_per_s * SEARCH.step_s)
    return [
        {"started": t0 + i / rate_per_s, "ended": t0 + i / rate_per_s + latency_ms / 1e3,
         "outcome": "completed", "latency_ms": latency_ms, "rounds": 1}
        for i in range(n)
    ]  # fmt: skip


def readings(t0: float, busy_per_s: list[float], cpu_share: float) -> list[ReplicaTime]:
    """The replicas' time read twice a second, busy `busy_per_s[k]` of each second of step
    k + 1, `cpu_share` of it on a CPU and the rest waiting for one."""
    found, busy = [ReplicaTime(t0, 0.0, 0.0)], 0.0
    for k in range(1, int(len(busy_per_s) * SEARCH.step_s * 2) + 1):
        busy += busy_per_s[int((k - 1) / 2 // SEARCH.step_s)] / 2
        found.append(ReplicaTime(t0 + k / 2, busy * cpu_share, busy * (1 - cpu_share)))
    return found


def test_each_step_says_what_a_round_took_of_the_replicas() -> None:
    """A round of 25 ms busy (20 of CPU): 10 calls/s keep the replica busy a quarter of
    the time, 20 a half, 30 three quarters; the third step breaks (its calls queued)."""
    t0 = 1000.0
    calls = served(t0, 10, 30) + served(t0 + 4, 20, 60) + served(t0 + 8, 30, 400)
    found = ceiling(SEARCH, calls, t0, 3, readings(t0, [0.25, 0.5, 0.75], cpu_share=0.8))
    assert found["ceiling_rate_per_s"] == 20.0 and found["broke_at_step"] == 3
    first, second, third = found["steps"]
    assert first["replica_busy_ms_per_round"] == pytest.approx(25, rel=0.15)
    assert first["replica_cpu_ms_per_round"] == pytest.approx(20, rel=0.15)
    assert first["replica_busy_share"] == pytest.approx(0.25, abs=0.02)
    assert second["replica_busy_share"] == pytest.approx(0.5, abs=0.02)
    assert third["replica_busy_ms_per_round"] == pytest.approx(25, rel=0.15)
    assert found["replica_busy_ms_per_round"] == pytest.approx(25, rel=0.1)
    assert service_round(None, found) == (
        found["replica_busy_ms_per_round"],
        "the replicas' busy time per round near the knee",
    )
    lines = ceiling_lines(found)
    assert lines[0].endswith("busy ms/round  busy share")
    assert any(line.startswith("replicas: ") and "ms busy per round" in line for line in lines)
    assert lines[-1].endswith("(near the knee: the step that broke and the 2 before it)")
    unbroken = ceiling_lines({**found, "broke_at_step": None})
    assert unbroken[-1].endswith("(the last 3 steps, none broke)")


def test_the_round_simulated_is_the_one_near_the_knee_not_the_first_steps() -> None:
    """The machine sped up after the second step (a round of 60 ms, then 25): the round that
    decides the ceiling is the one of the step that broke and the two before it."""
    t0, search = 1000.0, dataclasses.replace(SEARCH, rate_step_per_s=5.0, max_steps=4)
    calls = [c for k in range(4) for c in served(t0 + 4 * k, 5 * (k + 1), 30)]
    calls += served(t0 + 16, 25, 400)  # the fifth step breaks
    busy = [0.3, 0.6, 0.375, 0.5, 0.625]  # 60 ms a round at 5 and 10 calls/s, then 25 ms
    found = ceiling(search, calls, t0, 5, readings(t0, busy, cpu_share=1.0))
    assert found["broke_at_step"] == 5 and found["ceiling_rate_per_s"] == 20.0
    assert found["steps"][0]["replica_busy_ms_per_round"] == pytest.approx(60, rel=0.15)
    assert found["replica_busy_ms_per_round"] == pytest.approx(25, rel=0.1)


def test_a_round_given_is_simulated_before_the_one_measured_and_neither_without_both() -> None:
    assert service_round(12.5, {"replica_busy_ms_per_round": 30.0}) == (12.5, "as given")
    assert service_round(None, {})[0] is None
    assert service_round(None, {"replica_busy_ms_per_round": None})[0] is None


def test_a_step_without_readings_of_the_replicas_has_no_busy_figures() -> None:
    """Against a target the swarm cannot read its processes: the steps as before."""
    found = ceiling(SEARCH, served(1000.0, 10, 30), 1000.0, 1)
    assert "replica_busy_ms_per_round" not in found["steps"][0]
    assert "replica_busy_ms_per_round" not in found
    assert "busy" not in ceiling_lines(found)[0]


def test_a_step_in_which_no_call_started_holds_and_the_search_goes_on() -> None:
    """A low rate's few arrivals may all fall in the next step: none missed the SLO."""
    found = ceiling(SEARCH, served(1004.0, 10, 30), 1000.0, 2)
    assert [s["started"] for s in found["steps"]] == [0, 40]
    assert [s["held"] for s in found["steps"]] == [True, True]
    assert found["ceiling_rate_per_s"] == 20.0 and found["broke_at_step"] is None


def test_a_search_from_a_start_rate_adds_its_streams_to_the_first_steps() -> None:
    """--rate 1.5 --start-rate 6: four streams first, then one more each step."""
    config = LoadTestConfig(rate_per_s=1.5)
    plan = SwarmPlan(find_ceiling=True, headless=True, start_rate=6.0, step_s=2.0, max_steps=3)
    search = ceiling_search(config, plan)
    assert [search.rate_of(k) for k in (1, 2, 3)] == [6.0, 7.5, 9.0]
    steps: Any = RateSteps(search)
    ticks = []
    for t in range(7):
        steps.get_run_time = lambda t=t: float(t)
        ticks.append(steps.tick())
    # Each step's streams begin once the step before is judged, a moment after its end.
    assert ticks == [(4, 4.0)] * 3 + [(5, 5.0)] * 2 + [(6, 6.0)] + [None]
    assert ceiling_search(config, SwarmPlan(find_ceiling=True)).rate_of(1) == 1.5


@pytest.mark.parametrize("start_rate", [5.0, 0.5])
def test_a_start_rate_that_is_not_a_whole_number_of_streams_is_refused(start_rate: float) -> None:
    plan = SwarmPlan(find_ceiling=True, headless=True, start_rate=start_rate)
    with pytest.raises(LoadTestError, match="whole number of --rate"):
        ceiling_search(LoadTestConfig(rate_per_s=1.5), plan)

"""The simulation's ceiling beside a swarm's: labsim's planner asked, rate by rate, whether
the same replicas meet the same SLO."""

from __future__ import annotations

import pytest

from labsim.model.measured import DEFAULT_PATH
from loadtest.config import LoadTestConfig
from loadtest.scenarios.ceiling_prediction import predicted_ceiling

pytestmark = pytest.mark.slow

RATES = [float(k) for k in range(1, 21)]


def ceiling_for(round_ms: float, replicas: int = 1) -> dict:
    config = LoadTestConfig(
        replicas=replicas, tool_mix={"crunch": 1.0}, rate_per_s=1.0, cpu_workers=1
    )
    # An SLO of five rounds: time scales with the round, so the ceiling scales against it.
    return predicted_ceiling(str(DEFAULT_PATH), config, RATES, 5 * round_ms, 0.01, round_ms)


def test_one_worker_meets_the_slo_below_what_it_serves_and_stops_after() -> None:
    found = ceiling_for(100.0)  # one worker serves 10 calls/s at most
    rate = found["predicted_ceiling_rate_per_s"]
    assert rate is not None and 5 <= rate < 10
    steps = found["predicted_steps"]
    assert [s["held"] for s in steps] == [True] * (len(steps) - 1) + [False]
    assert steps[-1]["rate_per_s"] == rate + 1 and steps[-1]["p95_ms"] > 500


def test_a_round_twice_as_long_halves_the_ceiling() -> None:
    """Against an SLO of as many rounds."""
    one = ceiling_for(100.0)["predicted_ceiling_rate_per_s"]
    assert ceiling_for(200.0)["predicted_ceiling_rate_per_s"] == pytest.approx(one / 2, abs=1)


def test_a_second_replica_at_least_doubles_the_ceiling_below_what_both_serve() -> None:
    """Two replicas share their queue's ups and downs: more than twice one's ceiling."""
    one = ceiling_for(100.0)["predicted_ceiling_rate_per_s"]
    two = ceiling_for(100.0, replicas=2)["predicted_ceiling_rate_per_s"]
    assert 2 * one - 1 <= two < 20

"""The simulated twin of a live run: the tools, the calibrated inputs and the sessions."""

from __future__ import annotations

import math

import pytest

from labsim import study
from loadtest.config import LoadTestConfig
from loadtest.scenarios.twin import (
    UNMEASURED_ROUND_S,
    simulated_tool_mix,
    think_stops_per_call,
    twin_inputs,
    twin_params,
)
from loadtest.users.simulated_user import DUPLICATE_SHARE


def test_update_work_item_splits_into_its_two_paths() -> None:
    shares = simulated_tool_mix({"get_weather": 1.0, "update_work_item": 1.0})
    assert shares["update_work_item"] == pytest.approx(0.5 * DUPLICATE_SHARE)
    assert shares["get_weather"] == pytest.approx(0.5 + 0.5 * (1 - DUPLICATE_SHARE))
    assert sum(shares.values()) == pytest.approx(1.0)


def test_a_tool_the_simulation_does_not_model_is_refused() -> None:
    with pytest.raises(ValueError, match="provision_vm"):
        simulated_tool_mix({"get_weather": 1.0, "provision_vm": 1.0})


def test_a_shape_of_the_rounds_tool_is_simulated_as_its_rounds_and_questions() -> None:
    shares = simulated_tool_mix({"rounds/3x2": 1.0, "get_weather": 1.0})
    assert shares == {"rounds/3x2": 0.5, "get_weather": 0.5}
    assert think_stops_per_call({"rounds/3x2": 1.0}, "mrtr") == 2  # two asking rounds
    assert think_stops_per_call({"rounds/3x2": 1.0}, "sticky") == 4  # four questions


def test_mrtr_users_think_once_per_round_legacy_users_once_per_question() -> None:
    both_logins = {"link_accounts": 1.0}  # two questions in one round
    assert think_stops_per_call(both_logins, "mrtr") == 1
    assert think_stops_per_call(both_logins, "sticky") == 2
    duplicate = {"update_work_item": 1.0}  # a question in each of two rounds
    assert think_stops_per_call(duplicate, "mrtr") == think_stops_per_call(duplicate, "sse-store")


def run_summary(latencies_ms: list[float], started: int) -> dict:
    return {
        "started": started,
        "calls": [{"outcome": "completed", "latency_ms": ms} for ms in latencies_ms]
        + [{"outcome": "failed", "latency_ms": 9_999.0}],
        "faults": [
            {"event": "stop", "replica": "r1", "t": 5.0},
            {"event": "ready", "replica": "r1", "t": 5.8},
            {"event": "stop", "replica": "r2", "t": 6.0},
            {"event": "ready", "replica": "r2", "t": 7.2},
        ],
    }


def test_the_inputs_are_calibrated_from_the_run_and_obey_littles_law() -> None:
    config = LoadTestConfig(arch="mrtr", users=10, tool_mix={"get_weather": 1.0})
    inputs = twin_inputs(config, run_summary([20.0, 40.0], started=50))
    assert inputs.round_s == pytest.approx(0.030 / 2)  # get_weather: two rounds per call
    assert inputs.restart_s == pytest.approx(1.0)  # mean of 0.8 s and 1.2 s
    assert inputs.calls_per_session == pytest.approx(5.0)  # 50 calls by 10 users
    mean_think_s = config.think_time_median_s * math.exp(config.think_time_sigma**2 / 2)
    assert inputs.call_s == pytest.approx(mean_think_s + 0.030)
    assert inputs.arrival_rate_per_s * inputs.call_s == pytest.approx(config.users)


def test_an_architecture_that_did_not_run_gets_the_stand_ins() -> None:
    inputs = twin_inputs(LoadTestConfig(arch="sticky"), None)
    assert inputs.round_s == UNMEASURED_ROUND_S and inputs.calls_per_session == 1.0


def test_sessions_pinned_by_the_cookie_are_what_a_sticky_drain_cuts() -> None:
    config = LoadTestConfig(
        arch="sticky",
        scenario="rolling-upgrade",
        replicas=3,
        users=20,
        duration_s=20.0,
        fault_at_s=5.0,
        drain_timeout_s=2.0,
        think_time_median_s=0.5,
    )
    inputs = twin_inputs(config, run_summary([40.0] * 400, started=420))
    params = twin_params(config, inputs)
    assert params.workload.session_s == config.duration_s
    per_user = study.replicate(params, "sticky", replications=3, seed=1, processes=1)
    per_call = study.replicate(
        params.with_overrides(calls_per_session=1.0), "sticky", replications=3, seed=1, processes=1
    )
    # A user's calls keep arriving at its draining replica, so the drain times out and cuts.
    assert per_user["restarts"].mean() > 5 * max(per_call["restarts"].mean(), 1.0)

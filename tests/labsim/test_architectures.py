"""The three architectures in steady state: what each holds, sends and pays for."""

from __future__ import annotations

import numpy as np
import pytest

from labsim import ARCHITECTURES, SimParams, simulate
from labsim.model.tools import TOOLS
from labsim.study import scenarios
from tests.labsim.runs import assert_littles_law, run


def test_every_architecture_faces_the_same_calls() -> None:
    calls = [run("steady", a).calls for a in ARCHITECTURES]
    for other in calls[1:]:
        assert np.array_equal(calls[0]["arrival_s"], other["arrival_s"])
        assert np.array_equal(calls[0]["tool"], other["tool"])
    # ... and a different seed gives different calls.
    assert len(run("steady", "mrtr", seed=8).calls) != len(calls[0]) or not np.array_equal(
        run("steady", "mrtr", seed=8).calls["arrival_s"], calls[0]["arrival_s"]
    )


def test_mrtr_holds_no_memory_while_users_think() -> None:
    mrtr = run("steady", "mrtr")
    assert mrtr.measured_calls()["think_s"].sum() > 0
    assert mrtr.summary["peak_held_bytes"] == 0
    assert mrtr.summary["mean_held_bytes"] == 0
    assert mrtr.summary["peak_open_streams"] == 0
    for legacy in ("sse-store", "sticky"):
        summary = run("steady", legacy).summary
        assert summary["peak_held_bytes"] > 0
        assert summary["peak_open_streams"] > 0


def test_memory_held_is_the_users_thinking_time_times_the_call_footprint() -> None:
    result = run("steady", "sticky")
    params = result.params
    window_s = params.horizon_s - params.warmup_s
    measured = result.measured_calls()
    # Little's law for calls waiting on a user: held calls = rate x think time per call.
    expected_held_calls = measured["think_s"].sum() / window_s
    held_calls = result.summary["mean_held_bytes"] / params.cluster.held_call_bytes
    assert held_calls == pytest.approx(expected_held_calls, rel=0.08)


def test_users_who_answer_instantly_leave_nothing_held() -> None:
    for architecture in ARCHITECTURES:
        result = run("steady", architecture, think_scale=0.0, never_answer_share=0.0)
        assert result.summary["peak_held_bytes"] == 0
        assert result.summary["completed_fraction"] == 1.0


def test_only_the_sse_store_architecture_touches_and_pays_for_a_store() -> None:
    sse = run("steady", "sse-store").summary
    assert sse["store_ops"] > 0
    assert sse["cost_store_usd"] > 0
    for architecture in ("sticky", "mrtr"):
        summary = run("steady", architecture).summary
        assert summary["store_ops"] == 0
        assert summary["cost_store_usd"] == 0
    assert (
        sse["cost_per_million_calls_usd"]
        > run("steady", "mrtr").summary["cost_per_million_calls_usd"]
    )


def test_mrtr_carries_request_state_on_the_wire_both_ways() -> None:
    mrtr = run("steady", "mrtr").measured_calls()
    sticky = run("steady", "sticky").measured_calls()
    # Completed calls: a user who walked away never sent any state back.
    assert (mrtr["outcome"] == sticky["outcome"]).all()
    done = mrtr["outcome"] == "completed"
    # get_weather: one question, one answer POST either way, plus the state under MRTR.
    asking = (mrtr["tool"] == 1) & done
    assert (mrtr.loc[asking, "bytes_in"] > sticky.loc[asking, "bytes_in"]).all()
    assert (mrtr.loc[asking, "bytes_out"] > sticky.loc[asking, "bytes_out"]).all()
    # link_accounts: two questions in one MRTR round, but one elicitation request and one
    # answer POST each on the legacy stream.
    both = (mrtr["tool"] == 2) & done
    assert (mrtr.loc[both, "bytes_out"] < sticky.loc[both, "bytes_out"]).all()
    # A call that asks nothing has no state to carry.
    silent = (mrtr["tool"] == 0) & done
    assert (mrtr.loc[silent, "bytes_in"] == sticky.loc[silent, "bytes_in"]).all()


def test_server_latency_leaves_out_the_users_think_time() -> None:
    thinking = run("steady", "mrtr").measured_calls()
    instant = run("steady", "mrtr", think_scale=0.0, never_answer_share=0.0).measured_calls()
    done = thinking[thinking["outcome"] == "completed"]
    assert done["time_in_system_s"].mean() > 10 * done["server_latency_s"].mean()
    assert done["server_latency_s"].median() == pytest.approx(
        instant["server_latency_s"].median(), rel=0.1
    )


def test_rounds_follow_the_tool_and_nobody_is_asked_twice_in_steady_state() -> None:
    for architecture in ARCHITECTURES:
        calls = run("steady", architecture).measured_calls()
        done = calls[calls["outcome"] == "completed"]
        tools = [TOOLS[name] for name in run("steady", architecture).params.workload.tools]
        questions = done["tool"].map({k: tool.questions() for k, tool in enumerate(tools)})
        requests = done["tool"].map({k: tool.requests() for k, tool in enumerate(tools)})
        assert (done["rounds"] == requests).all()
        assert (done["answers"] == questions).all()
        assert calls["re_prompts"].sum() == 0
        assert calls["wasted_cpu_s"].sum() == 0


@pytest.mark.slow
def test_a_user_who_never_answers_is_abandoned_at_the_answer_timeout() -> None:
    for architecture in ARCHITECTURES:
        result = run("steady", architecture, never_answer_share=1.0)
        calls = result.measured_calls()
        asking = calls["tool"] > 0
        assert (calls.loc[asking, "outcome"] == "abandoned").all()
        assert (calls.loc[~asking, "outcome"] == "completed").all()
        timeout_s = result.params.client.answer_timeout_s
        assert calls.loc[asking, "time_in_system_s"].min() >= timeout_s


def test_re_executing_earlier_rounds_costs_mrtr_cpu() -> None:
    # update_work_item: three rounds, so rerunning the earlier ones adds two thirds.
    tools = ("crunch", "get_weather", "update_work_item")
    carried = run("steady", "mrtr", tools=tools).measured_calls()
    rerun = run("steady", "mrtr", tools=tools, reexecution_fraction=1.0).measured_calls()
    two_questions = carried["tool"] == 2
    assert rerun.loc[two_questions, "cpu_s"].sum() > 1.5 * carried.loc[two_questions, "cpu_s"].sum()
    no_questions = carried["tool"] == 0
    assert rerun.loc[no_questions, "cpu_s"].sum() == pytest.approx(
        carried.loc[no_questions, "cpu_s"].sum()
    )


def test_utilization_matches_the_offered_cpu() -> None:
    result = run("steady", "mrtr")
    params = result.params
    workload = params.workload
    rounds_per_call = np.dot(workload.tool_mix, [TOOLS[n].requests() for n in workload.tools])
    offered_s = (
        workload.arrival_rate_per_s
        * rounds_per_call
        * (workload.round_cpu.mean_s + workload.request_overhead_s)
    )
    workers = params.cluster.replicas * params.cluster.workers_per_replica
    # Abandoned calls skip their last rounds, so the busy share is a little below the offer.
    assert result.summary["utilization"] == pytest.approx(offered_s / workers, rel=0.1)


@pytest.mark.parametrize("policy", ["random", "least-connections", "power-of-two"])
def test_every_balancer_serves_the_steady_scenario(policy: str) -> None:
    for architecture in ARCHITECTURES:
        params = SimParams(horizon_s=500.0, warmup_s=200.0).with_overrides(lb_policy=policy)
        result = simulate(params, architecture, seed=3)
        assert_littles_law(result)
        assert result.summary["failed"] == 0
        assert result.summary["load_imbalance"] < 1.5


def test_scenario_parameters_can_be_overridden_by_name() -> None:
    params = scenarios.build("rolling-upgrade", replicas=8, drain_timeout_s=300.0, think_scale=0.5)
    assert params.cluster.replicas == 8
    assert params.faults[0].drain_timeout_s == 300.0
    assert params.workload.think_scale == 0.5


def test_a_legacy_user_opens_its_session_through_the_balancer_before_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Behind a plain balancer (sse-store) a user's `initialize` and its notification take
    their turns of the round robin, each admitted by a replica: two requests more per call
    than behind the sticky one, whose cookie sends the session where the call goes."""
    from labsim.model import cluster

    admitted = {"requests": 0}
    admit = cluster.Replica.admit

    def counted(replica: cluster.Replica) -> bool:
        admitted["requests"] += 1
        return admit(replica)

    monkeypatch.setattr(cluster.Replica, "admit", counted)
    params = SimParams(horizon_s=300.0, warmup_s=0.0).with_overrides(replicas=3)
    requests = {}
    for architecture in ("sticky", "sse-store"):
        admitted["requests"] = 0
        result = simulate(params, architecture, seed=5)
        assert result.summary["restarts"] == 0  # no cut: each session opened once
        requests[architecture] = (admitted["requests"], result.summary["calls"])
    (sticky, calls), (sse_store, same_calls) = requests["sticky"], requests["sse-store"]
    assert calls == same_calls > 1000
    assert sse_store - sticky == 2 * calls

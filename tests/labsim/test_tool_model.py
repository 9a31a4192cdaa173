"""The simulation's tool model: any number of rounds (a measured mean as a discrete mix
of two counts), and a tool's own work per round beside the workload's."""

from __future__ import annotations

import numpy as np
import pytest

from labsim.model.checks import ParameterError
from labsim.model.demand import ServiceTime, WorkloadParams
from labsim.model.params import SimParams
from labsim.model.simulation import simulate
from labsim.model.tools import TOOLS, questions_per_call, requests_per_call, target_tool
from labsim.model.workload import draw_workload


def test_a_mean_of_rounds_is_a_mix_of_the_two_counts_around_it() -> None:
    tool = target_tool("transfer", 2.2)
    assert len(tool.rounds_v1) == 2 and tool.shorter_share == pytest.approx(0.8)
    assert tool.mean_requests() == pytest.approx(2.2) and tool.requests() == 3
    assert tool.mean_questions() == pytest.approx(1.2)
    draws = np.random.default_rng(1).random(20_000)
    rounds = [len(tool.for_call(d).rounds_v1) + 1 for d in draws]
    assert set(rounds) == {2, 3}
    assert np.mean(rounds) == pytest.approx(2.2, abs=0.02)
    # A whole count is that count for every call; one round asks nothing.
    assert target_tool("book_room", 2).for_call(0.0).requests() == 2
    assert target_tool("summarize", 1).rounds_v1 == ()
    with pytest.raises(ParameterError, match="rounds per call"):
        target_tool("nothing", 0.5)


def test_target_tools_are_named_in_the_mix_and_refused_when_unknown() -> None:
    book = target_tool("book_room", 2)
    workload = WorkloadParams(
        tools=("book_room", "get_weather"), tool_mix=(0.5, 0.5), target_tools=(book,)
    )
    assert workload.specs() == (book, TOOLS["get_weather"])
    assert requests_per_call(workload.specs(), workload.tool_mix) == 2
    assert questions_per_call(workload.specs(), workload.tool_mix) == 1
    with pytest.raises(
        ParameterError, match=r"unknown tools \['refund'\]; choose from book_room, crunch"
    ):
        WorkloadParams(tools=("refund",), tool_mix=(1.0,), target_tools=(book,))


def test_a_tools_own_work_is_drawn_for_its_calls_alone() -> None:
    heavy = target_tool("summarize", 1, ServiceTime(0.010, "deterministic", 0.0))
    workload = WorkloadParams(
        tools=("summarize", "get_weather"), tool_mix=(0.5, 0.5), target_tools=(heavy,),
        round_cpu=ServiceTime(0.001, "deterministic", 0.0),
    )  # fmt: skip
    drawn = draw_workload(workload, 100.0, 3)
    assert np.all(drawn.cpu_s[drawn.tool == 0] == 0.010)
    assert np.all(drawn.cpu_s[drawn.tool == 1] == 0.001)
    assert workload.tool_cpu_per_call_s() == pytest.approx(0.5 * 0.010 + 0.5 * 2 * 0.001)


def test_a_simulated_call_takes_its_tools_rounds() -> None:
    transfer = target_tool("transfer", 2.5, ServiceTime(0.002, "deterministic", 0.0))
    params = SimParams().with_overrides(
        tools=("transfer",), tool_mix=(1.0,), target_tools=(transfer,), arrival_rate_per_s=5.0,
        never_answer_share=0.0, think_scale=0.0, warmup_s=0.0, horizon_s=200.0,
    )  # fmt: skip
    calls = simulate(params, "mrtr", 1).calls
    done = calls[calls["outcome"] == "completed"]
    assert set(done["rounds"]) == {2, 3}
    assert done["rounds"].mean() == pytest.approx(2.5, abs=0.1)
    assert done["cpu_s"].min() >= 2 * 0.002


def test_a_tools_own_bytes_are_counted_for_its_calls() -> None:
    small = target_tool("transfer", 1, request_bytes=100, response_bytes=50)
    params = SimParams().with_overrides(
        tools=("transfer", "crunch"), tool_mix=(0.5, 0.5), target_tools=(small,),
        arrival_rate_per_s=5.0, warmup_s=0.0, horizon_s=100.0,
    )  # fmt: skip
    calls = simulate(params, "mrtr", 1).calls
    done = calls[calls["outcome"] == "completed"]
    assert set(done[done["tool"] == 0]["bytes_in"]) == {100}
    assert set(done[done["tool"] == 0]["bytes_out"]) == {50}
    assert set(done[done["tool"] == 1]["bytes_in"]) == {params.workload.request_bytes}

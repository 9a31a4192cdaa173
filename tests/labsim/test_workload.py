"""The workload: Poisson arrivals, the tool mix, service times, think times."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from labsim import ParameterError, ServiceTime, WorkloadParams
from labsim.model.workload import arrival_times, draw_workload, sample_service_times


def test_arrivals_form_a_poisson_process_at_the_requested_rate() -> None:
    rng = np.random.default_rng(1)
    times = arrival_times(5.0, 4_000.0, rng)
    assert len(times) == pytest.approx(20_000, abs=4 * math.sqrt(20_000))
    gaps = np.diff(times)
    assert stats.kstest(gaps, "expon", args=(0, 1 / 5.0)).pvalue > 0.001
    assert (gaps >= 0).all()


def test_a_rate_multiplier_changes_arrivals_only_inside_its_window() -> None:
    rng = np.random.default_rng(2)
    times = arrival_times(10.0, 300.0, rng, pieces=[(100.0, 200.0, 4.0)])
    inside = np.count_nonzero((times >= 100) & (times < 200))
    outside = len(times) - inside
    assert inside == pytest.approx(4_000, abs=4 * math.sqrt(4_000))
    assert outside == pytest.approx(2_000, abs=4 * math.sqrt(2_000))


@pytest.mark.parametrize(
    "service",
    [
        ServiceTime(mean_s=0.05, kind="exponential"),
        ServiceTime(mean_s=0.05, kind="deterministic"),
        ServiceTime(mean_s=0.05, kind="lognormal", cv=2.0),
    ],
)
def test_service_times_have_the_requested_mean(service: ServiceTime) -> None:
    draws = sample_service_times(service, np.random.default_rng(3), 200_000)
    assert draws.mean() == pytest.approx(0.05, rel=0.03)
    expected_cv = {"exponential": 1.0, "deterministic": 0.0, "lognormal": 2.0}[service.kind]
    assert draws.std() / draws.mean() == pytest.approx(expected_cv, abs=0.15)


def test_think_times_have_the_stated_median_a_heavy_tail_and_some_users_never_answer() -> None:
    workload = draw_workload(WorkloadParams(arrival_rate_per_s=50.0), 2_000.0, seed=4)
    first_question = workload.think_s[:, 0]
    never = np.isinf(first_question)
    assert never.mean() == pytest.approx(0.05, abs=0.01)
    answered = first_question[~never]
    assert np.median(answered) == pytest.approx(10.0, rel=0.05)
    assert 60.0 < np.quantile(answered, 0.95) < 300.0


def test_a_user_who_walks_away_never_answers_a_later_question() -> None:
    workload = draw_workload(WorkloadParams(arrival_rate_per_s=50.0), 500.0, seed=5)
    gone = np.isinf(workload.think_s)
    assert (gone[:, 1:] >= gone[:, :-1]).all()


def test_think_time_scales_to_zero_for_instant_answers() -> None:
    params = WorkloadParams(think_scale=0.0, never_answer_share=0.0)
    workload = draw_workload(params, 200.0, seed=6)
    assert (workload.think_s == 0).all()


def test_the_tool_mix_is_respected_and_the_same_seed_draws_the_same_calls() -> None:
    params = WorkloadParams(arrival_rate_per_s=100.0, tool_mix=(0.2, 0.3, 0.5))
    first = draw_workload(params, 200.0, seed=7)
    again = draw_workload(params, 200.0, seed=7)
    shares = np.bincount(first.tool, minlength=3) / len(first)
    assert shares == pytest.approx([0.2, 0.3, 0.5], abs=0.02)
    assert np.array_equal(first.arrival_s, again.arrival_s)
    assert np.array_equal(first.cpu_s, again.cpu_s)


def test_changing_the_tool_mix_leaves_arrivals_and_think_times_alone() -> None:
    one = draw_workload(WorkloadParams(tool_mix=(0.5, 0.3, 0.2)), 300.0, seed=8)
    two = draw_workload(WorkloadParams(tool_mix=(0.1, 0.1, 0.8)), 300.0, seed=8)
    assert np.array_equal(one.arrival_s, two.arrival_s)
    assert np.array_equal(one.think_s, two.think_s)


@pytest.mark.parametrize(
    "bad",
    [
        {"arrival_rate_per_s": -1.0},
        {"arrival_rate_per_s": 0.0},
        {"tool_mix": (0.5, 0.5, 0.5)},
        {"never_answer_share": 1.5},
        {"think_scale": -1.0},
        {"round_cpu": "fast"},
    ],
)
def test_a_workload_outside_its_domain_is_a_parameter_error(bad: dict) -> None:
    with pytest.raises(ParameterError):
        WorkloadParams(**bad)


def test_an_unknown_service_time_kind_is_a_parameter_error() -> None:
    with pytest.raises(ParameterError, match="kind"):
        ServiceTime(mean_s=1.0, kind="pareto")

"""`labsim plan` as a study: the fleet it answers meets the SLO and limits in simulation,
one fewer does not and says what broke, what binds is named (or none), its inputs are
the parameter file's, and its answer holds over seeds away from the latency floor."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from labsim.model import measured
from labsim.model.checks import ParameterError
from labsim.model.params import SimParams
from labsim.study import capacity
from labsim.study.capacity import monthly_cost, plan, sold_shape
from labsim.study.plan import Plan
from labsim.study.plan_inputs import plan_inputs
from labsim.study.plan_request import PlanRequest
from labsim.study.plan_verdict import BINDINGS, NEAR_LIMIT, Verdict, judge, straddles

ARCHITECTURES = ("sse-store", "sticky", "mrtr")
# Short questions: a minute measured after a 30 s warm-up, two replications a size.
QUICK = {"answer_timeout_s": 30.0, "measure_s": 60.0, "replications": 2}


def check_contract(answer: Plan) -> None:
    assert set(answer.architectures) == set(ARCHITECTURES)
    for result in answer.architectures.values():
        assert result.binding in BINDINGS
        assert result.meets is True and result.fleet is not None
        assert result.fleet.replicas >= 1
        breakdown = result.cost_breakdown or {}
        parts = breakdown["replicas_usd"] + breakdown["store_usd"] + breakdown["egress_usd"]
        assert result.cost_per_month_usd == pytest.approx(parts)
        sizes = result.simulated_sizes
        # Every size between the first guess and the answer was simulated.
        assert sizes == tuple(range(min(sizes), max(sizes) + 1))
        if result.fleet.replicas == 1:
            assert result.one_fewer is None
            assert result.one_fewer_reason == "nothing smaller than 1 replica"
        else:
            fewer = result.one_fewer
            assert fewer is not None and fewer.replicas == result.fleet.replicas - 1
            assert fewer.meets is False and fewer.broke


def cpu_bound(**changes: object) -> PlanRequest:
    """60 calls/s of 20 ms rounds on one-vCPU replicas: three replicas at 70% CPU."""
    fields: dict = {
        "rate_per_s": 60.0,
        "think_time_median_s": 1.0,
        "slo_p95_ms": 1000.0,
        "vcpus_per_replica": 1.0,
        "memory_gb_per_replica": 2.0,
        "round_cpu_ms": 20.0,
        "round_cpu_kind": "deterministic",
        **QUICK,
    }
    return PlanRequest(**(fields | changes))


@pytest.mark.slow
def test_the_answer_is_the_same_over_seeds_away_from_the_latency_floor() -> None:
    answers = [plan(cpu_bound(seed=seed)) for seed in (0, 1, 2)]
    for answer in answers:
        check_contract(answer)
    for architecture in ARCHITECTURES:
        found = {(a.architectures[architecture].replicas,
                  a.architectures[architecture].binding) for a in answers}  # fmt: skip
        assert found == {(3, "cpu")}, architecture


@pytest.mark.slow
def test_binding_is_none_when_no_constraint_is_near_its_limit() -> None:
    answer = plan(cpu_bound(rate_per_s=2.0))
    check_contract(answer)
    for result in answer.architectures.values():
        assert result.fleet is not None and result.fleet.replicas == 1
        assert result.binding == "none"
        assert max(v for v in result.fleet.use.values() if v is not None) < NEAR_LIMIT


@pytest.mark.slow
def test_a_parameter_files_base_memory_changes_the_plan(tmp_path: Path) -> None:
    payload = json.loads(measured.DEFAULT_PATH.read_text())
    payload["values"]["held_call_bytes"] = 5_000_000  # a tool that keeps a document alive
    request = PlanRequest(
        rate_per_s=5.0,
        think_time_median_s=20.0,
        slo_p95_ms=1000.0,
        vcpus_per_replica=1.0,
        memory_gb_per_replica=2.0,
        connection_limit=4096,
        **QUICK,
    )
    answers = {}
    for base in (50_000_000, 1_800_000_000):
        payload["replica"] = {"base_memory_bytes": base}
        path = tmp_path / f"base-{base}.json"
        path.write_text(json.dumps(payload))
        answers[base] = plan(request, plan_inputs(measured.load(path))).architectures
        for result in answers[base].values():
            assert result.base_memory_bytes == base
    for legacy in ("sticky", "sse-store"):
        light, heavy = answers[50_000_000][legacy], answers[1_800_000_000][legacy]
        assert (heavy.replicas or 0) > (light.replicas or 0)
        assert heavy.binding == "memory"
        assert heavy.one_fewer is not None and heavy.one_fewer.broke[0] == "memory"


@pytest.mark.slow
def test_one_fewer_shows_what_broke_when_held_streams_fill_the_connections() -> None:
    request = PlanRequest(
        rate_per_s=10.0,
        think_time_median_s=10.0,
        slo_p95_ms=200.0,
        vcpus_per_replica=1.0,
        memory_gb_per_replica=2.0,
        connection_limit=24,
        **QUICK,
    )
    answer = plan(request)
    check_contract(answer)
    plans = answer.architectures
    assert plans["mrtr"].replicas == 1
    for legacy in ("sticky", "sse-store"):
        assert plans[legacy].binding == "connections"
        assert (plans[legacy].replicas or 0) > 1
        fewer = plans[legacy].one_fewer
        assert fewer is not None and fewer.broke[0] == "connections"
        assert fewer.refused_requests > 0 or fewer.full_marks > 0
    # Only the store architecture pays for a store.
    assert (plans["sse-store"].cost_breakdown or {})["store_usd"] > 0
    assert (plans["mrtr"].cost_breakdown or {})["store_usd"] == 0


@pytest.mark.slow
def test_an_slo_below_the_latency_floor_is_answered_without_a_search() -> None:
    answer = plan(cpu_bound(slo_p95_ms=30.0))  # a call's rounds take 40-60 ms alone
    for result in answer.architectures.values():
        assert result.replicas is None and result.meets is False
        assert result.simulated_sizes == ()
        assert "no fleet meets" in result.reason
        assert result.latency_floor_p95_ms > 30.0


def test_a_verdict_the_runs_cannot_settle_gets_more_runs_then_is_marginal(monkeypatch) -> None:
    request = cpu_bound(rate_per_s=2.0, replications=2, max_replications=6)
    calls: list[int] = []

    def straddling_runs(specs, processes=None, progress=False, description=""):
        import pandas as pd

        calls.append(len(specs))
        # p95s of 10 ms and 1,990 ms around the 1,000 ms SLO: the interval holds it.
        rows = [_run(spec.architecture, spec.labels[0][1], 10.0 + 1980.0 * (k % 2))
                for k, spec in enumerate(specs)]  # fmt: skip
        return pd.DataFrame(rows)

    monkeypatch.setattr(capacity, "run_many", straddling_runs)
    answer = plan(request, architectures=("mrtr",))
    assert calls[:3] == [2, 2, 2]  # 2, then 2 more, then 2 more: 6, the most allowed
    result = answer.architectures["mrtr"].fleet
    assert result is not None and result.replications == 6
    assert result.marginal is True


def _run(architecture: str, replicas: int, p95_ms: float) -> dict:
    return {
        "architecture": architecture,
        "replicas": replicas,
        "p95_latency_all_s": p95_ms / 1e3,
        "p50_latency_all_s": p95_ms / 2e3,
        "p95_latency_s": p95_ms / 1e3,
        "completed_share": 1.0,
        "utilization": 0.1,
        "peak_replica_held_bytes": 0,
        "peak_replica_connections": 2,
        "refused_requests": 0,
        "down_marks": 0,
        "full_marks": 0,
        "store_ops": 0,
        "bytes_out": 1000,
    }


def test_runs_that_disagree_on_a_limit_cannot_settle_a_verdict() -> None:
    request = cpu_bound()
    quiet = _run("mrtr", 3, 50.0)
    turned_away = quiet | {"refused_requests": 1}
    split = judge(request, 3, [quiet, turned_away], 50_000_000)
    assert split.broke() == ["connections"] and split.runs_disagree
    assert straddles(request, split)
    agreed = judge(request, 3, [quiet, quiet], 50_000_000)
    assert agreed.meets and not straddles(request, agreed)


def test_a_failed_call_is_a_miss_of_the_slo() -> None:
    request = cpu_bound()
    runs = [_run("mrtr", 3, 50.0) | {"p95_latency_all_s": math.inf, "completed_share": 0.9}]
    verdict = judge(request, 3, runs, 50_000_000)
    assert verdict.p95_ms == math.inf and verdict.p95_completed_ms == 50.0
    assert {"latency", "completion"} <= set(verdict.broke())


def test_the_peak_connections_are_those_one_run_sees_and_refusals_still_break() -> None:
    # A live check is one run as long as a replication's measurement: the plan's peak is
    # what such a run's busiest replica reaches, over the runs, not the most of them all.
    request = cpu_bound()
    low, high = (_run("mrtr", 3, 50.0) | {"peak_replica_connections": n} for n in (10, 20))
    verdict = judge(request, 3, [low, high, high], 50_000_000)
    assert verdict.peak_replica_connections == 17
    assert verdict.use["connections"] == pytest.approx(17 / (request.connection_limit - 1))
    # A run that turned a request away breaks the limit whatever the peak.
    refused = judge(request, 3, [low, low | {"refused_requests": 2}], 50_000_000)
    assert refused.peak_replica_connections == 10 and "connections" in refused.broke()


def test_the_monthly_bill_is_the_fleet_the_store_and_the_bytes() -> None:
    params = SimParams().with_overrides(
        vcpus_per_replica=2.0, memory_gb_per_replica=4.0, warmup_s=0.0, horizon_s=300.0
    )
    runs = [{"store_ops": 3000, "bytes_out": 6_000_000}]
    verdict = Verdict(3, 100.0, (90.0, 110.0), 1.0, (1.0, 1.0), 50.0, 100.0, 0.3, 1e8, 10,
                      0.0, 0.0, 0.0, {}, runs=runs)  # fmt: skip
    month_s = 730 * 3600
    cost = params.cost
    bill = monthly_cost(params, "sse-store", verdict)
    replica_hour = 2.0 * cost.vcpu_hour_usd + 4.0 * cost.gb_hour_usd
    assert bill["replicas_usd"] == pytest.approx(3 * 730 * replica_hour)
    ops = 3000 / 300 * month_s
    store = 730 * params.store.billed_gb * cost.store_gb_hour_usd
    store += ops * params.store.ecpus_per_op * cost.store_usd_per_million_ecpu / 1e6
    assert bill["store_usd"] == pytest.approx(store, rel=1e-6)
    egress = 6_000_000 / 300 * month_s / 1e9 * cost.egress_usd_per_gb
    assert bill["egress_usd"] == pytest.approx(egress, rel=1e-6)
    verdict.runs = [{"store_ops": 0, "bytes_out": 6_000_000}]
    assert monthly_cost(params, "mrtr", verdict)["store_usd"] == 0


def test_a_shape_fargate_does_not_sell_is_rounded_up_and_said() -> None:
    request, note = sold_shape(PlanRequest(vcpus_per_replica=2.0, memory_gb_per_replica=0.5))
    assert (request.vcpus_per_replica, request.memory_gb_per_replica) == (2.0, 4.0)
    assert "rounded up" in note and "2 vCPU, 0.5 GB" in note
    request, note = sold_shape(PlanRequest(vcpus_per_replica=2.0, memory_gb_per_replica=20.0))
    assert (request.vcpus_per_replica, request.memory_gb_per_replica) == (4.0, 20.0)
    request, note = sold_shape(PlanRequest(vcpus_per_replica=8.0, memory_gb_per_replica=17.0))
    assert request.memory_gb_per_replica == 20.0  # 8 vCPU: 16-60 GB in 4 GB steps
    assert sold_shape(PlanRequest(vcpus_per_replica=1.0, memory_gb_per_replica=2.0))[1] == ""
    request, note = sold_shape(PlanRequest(vcpus_per_replica=0.5, memory_gb_per_replica=2.0))
    assert (note, request.workers, request.worker_speed) == ("", 1, 0.5)
    request, note = sold_shape(PlanRequest(vcpus_per_replica=0.25, memory_gb_per_replica=3.0))
    assert (request.vcpus_per_replica, request.memory_gb_per_replica) == (0.5, 3.0)
    with pytest.raises(ParameterError, match="sells no replica"):
        sold_shape(PlanRequest(vcpus_per_replica=16.0, memory_gb_per_replica=200.0))


@pytest.mark.parametrize(
    ("bad", "flag"),
    [
        ({"rate_per_s": 0}, "--rate"),
        ({"rate_per_s": 1e9}, "--rate"),
        ({"measure_s": 1e12}, "--measure-s"),
        ({"tools": ("get_weather", "teleport"), "tool_mix": (0.5, 0.7)}, "--tool-mix"),
        ({"target_cpu_utilization": 1.5}, "--target-cpu"),
        ({"slo_completed_share": 0.0}, "--slo-completed"),
        ({"replications": 0}, "--replications"),
        ({"max_replicas": 10**9}, "--max-replicas"),
        ({"round_cpu_ms": -1.0}, "--round-cpu-ms"),
    ],
)
def test_an_impossible_request_is_refused_naming_its_flag(bad: dict, flag: str) -> None:
    with pytest.raises(ParameterError, match=flag):
        PlanRequest(**bad)


def test_a_tool_neither_demo_nor_measured_is_refused_before_any_run() -> None:
    # A name the demo catalogue lacks may be a parameter file's tool: the plan, which
    # reads the file, refuses it.
    request = PlanRequest(tools=("get_weather", "teleport"), tool_mix=(0.5, 0.5))
    with pytest.raises(ParameterError, match=r"--tool-mix: unknown tools \['teleport'\]"):
        plan(request, architectures=("mrtr",))


def test_the_round_is_stated_or_measured() -> None:
    measured_round = plan_inputs().measured_round
    assert PlanRequest().whole_round(measured_round) == measured_round
    stated = PlanRequest(round_cpu_ms=5.0, round_cpu_cv=0.5).whole_round(measured_round)
    assert (stated.mean_s, stated.kind, stated.cv) == (0.005, "lognormal", 0.5)
    with pytest.raises(ParameterError, match="--round-cpu-cv"):
        PlanRequest(round_cpu_cv=0.5, round_cpu_kind="exponential").whole_round(measured_round)

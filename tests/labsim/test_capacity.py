"""`labsim plan`: the fleet it answers meets the SLO and limits in simulation, one fewer
does not, and the two regimes of the capacity question come out as they should."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from labsim.model.checks import ParameterError
from labsim.model.params import SimParams
from labsim.study.capacity import BINDINGS, Evaluation, monthly_cost, plan
from labsim.study.plan_request import PlanRequest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURES = ("mrtr", "sticky", "sse-store")
# Short runs: fewer seconds measured and two replications per fleet size.
SHORT = ["--measure-s", "120", "--replications", "2"]


def check_contract(answer: dict) -> None:
    assert set(answer["architectures"]) == set(ARCHITECTURES)
    for result in answer["architectures"].values():
        assert result["binding"] in BINDINGS
        assert result["meets_slo"] is True
        assert result["replicas"] >= 1
        assert result["p95_ms"] > 0
        breakdown = result["cost_breakdown"]
        assert {"replicas_usd", "store_usd", "egress_usd"} <= set(breakdown)
        parts = breakdown["replicas_usd"] + breakdown["store_usd"] + breakdown["egress_usd"]
        assert result["cost_per_month_usd"] == pytest.approx(parts)
        fewer = result["one_fewer"]
        assert fewer["replicas"] == result["replicas"] - 1
        assert fewer["meets_slo"] is False


def test_long_think_times_on_small_replicas_hold_back_the_legacy_architectures(
    tmp_path: Path,
) -> None:
    out = tmp_path / "plan.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "labsim", "plan", "--rate", "10", "--think-median-s", "90",
            "--slo-p95-ms", "400", "--memory-gb-per-replica", "0.5", "--connection-limit",
            "256", "--json", str(out), *SHORT,
        ],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "binding constraint" in done.stdout and "cost per month" in done.stdout
    answer = json.loads(out.read_text())
    check_contract(answer)
    plans = answer["architectures"]
    mrtr = plans["mrtr"]
    for legacy in ("sticky", "sse-store"):
        assert plans[legacy]["binding"] in ("memory", "connections")
        assert plans[legacy]["replicas"] > mrtr["replicas"]
        assert plans[legacy]["cost_per_month_usd"] > mrtr["cost_per_month_usd"]
    # Only the store architecture pays for a store.
    assert plans["sse-store"]["cost_breakdown"]["store_usd"] > 0
    assert mrtr["cost_breakdown"]["store_usd"] == 0


def test_short_think_times_on_roomy_replicas_are_bound_by_cpu_or_latency_alike() -> None:
    request = PlanRequest(
        rate_per_s=40.0,
        think_median_s=1.0,
        slo_p95_ms=300.0,
        memory_gb_per_replica=8.0,
        connection_limit=4096,
        measure_s=120.0,
        replications=2,
    )
    answer = plan(request)
    check_contract(answer)
    plans = answer["architectures"]
    for result in plans.values():
        assert result["binding"] in ("cpu", "latency")
    sizes = [result["replicas"] for result in plans.values()]
    assert max(sizes) - min(sizes) <= 1


def test_the_monthly_bill_is_the_fleet_the_store_and_the_bytes() -> None:
    request = PlanRequest(10.0, 5.0, 300.0, 1.0, 512)
    base = SimParams()
    runs = [{"store_ops": 3000, "bytes_out": 6_000_000}]
    result = Evaluation(3, 100.0, 1.0, 0.3, 1e8, 10, dict.fromkeys(BINDINGS, 0.5), runs)
    window_s = request.measure_s
    month_s = 730 * 3600
    cost = base.cost
    bill = monthly_cost(request, base, "sse-store", result)
    replica_hour = 2.0 * cost.vcpu_hour_usd + 1.0 * cost.gb_hour_usd
    assert bill["replicas_usd"] == pytest.approx(3 * 730 * replica_hour)
    ops = 3000 / window_s * month_s
    store = 730 * base.store.billed_gb * cost.store_gb_hour_usd
    store += ops * base.store.ecpus_per_op * cost.store_usd_per_million_ecpu / 1e6
    assert bill["store_usd"] == pytest.approx(store, rel=1e-6)
    egress = 6_000_000 / window_s * month_s / 1e9 * cost.egress_usd_per_gb
    assert bill["egress_usd"] == pytest.approx(egress, rel=1e-6)
    # No store: MRTR runs do no store operations, and no store is provisioned.
    result.runs = [{"store_ops": 0, "bytes_out": 6_000_000}]
    assert monthly_cost(request, base, "mrtr", result)["store_usd"] == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"memory_gb_per_replica": 0.01},
        {"rate_per_s": 0},
        {"tools": ("get_weather", "teleport"), "tool_mix": (0.5, 0.5)},
        {"target_cpu_utilization": 1.5},
    ],
)
def test_an_impossible_request_is_a_parameter_error(bad: dict) -> None:
    fields = {
        "rate_per_s": 10.0,
        "think_median_s": 5.0,
        "slo_p95_ms": 300.0,
        "memory_gb_per_replica": 1.0,
        "connection_limit": 512,
    }
    with pytest.raises(ParameterError):
        PlanRequest(**{**fields, **bad})

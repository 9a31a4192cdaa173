"""Replications, confidence intervals, comparisons, sweeps, and the bill."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from labsim import ARCHITECTURES, ParameterError, SimParams
from labsim.model.cost import Usage, bill, replica_hour_usd
from labsim.study import compare, replicate, sweep
from labsim.study.experiments import batch_means_interval, confidence_interval, replication_seeds

SHORT = {"horizon_s": 400.0, "warmup_s": 100.0}


def test_confidence_interval_is_students_t() -> None:
    sample = [2.0, 3.5, 1.0, 4.2, 2.8]
    mean, half_width = confidence_interval(sample, level=0.95)
    low, high = stats.t.interval(
        0.95, len(sample) - 1, loc=np.mean(sample), scale=stats.sem(sample)
    )
    assert mean == pytest.approx(np.mean(sample))
    assert (mean - half_width, mean + half_width) == pytest.approx((low, high))
    assert np.isnan(confidence_interval([1.0])[1])


def test_batch_means_widen_the_interval_of_correlated_observations() -> None:
    rng = np.random.default_rng(1)
    walk = np.cumsum(rng.normal(size=20_000)) * 0.01 + rng.normal(size=20_000)
    naive = confidence_interval(walk)[1]
    batched = batch_means_interval(walk, batches=20)[1]
    assert batched > 3 * naive


def test_replication_seeds_are_distinct_and_reproducible() -> None:
    seeds = replication_seeds(42, 10)
    assert len(set(seeds)) == 10
    assert seeds == replication_seeds(42, 10)
    assert seeds[:3] != replication_seeds(43, 3)
    with pytest.raises(ParameterError):
        replication_seeds(42, 0)


def test_runs_in_parallel_give_the_same_numbers_as_runs_in_line() -> None:
    params = SimParams(**SHORT)
    inline = replicate(params, "sticky", replications=2, seed=3, processes=1)
    pooled = replicate(params, "sticky", replications=2, seed=3, processes=2)
    pd.testing.assert_frame_equal(inline, pooled)
    assert inline["seed"].nunique() == 2


def test_compare_gives_every_architecture_every_metric_with_an_interval() -> None:
    table = compare("crash", replications=2, seed=1, processes=2, **SHORT, at_s=200.0)
    assert set(table["architecture"]) == set(ARCHITECTURES)
    assert set(table["scenario"]) == {"crash"}
    lost = table[table["metric"] == "state_losses"].set_index("architecture")
    assert lost.at["mrtr", "mean"] == 0
    assert lost.at["sticky", "mean"] > 0
    assert (table["replications"] == 2).all()
    assert table.loc[table["metric"] == "calls", "ci_half_width"].notna().all()


def test_a_sweep_varies_one_parameter_and_shows_its_effect() -> None:
    table = sweep(
        "steady",
        "think_scale",
        [0.1, 1.0],
        replications=2,
        architectures=("sticky",),
        processes=2,
        never_answer_share=0.0,
        **SHORT,
    )
    # Without users who never answer, memory held scales with think time.
    held = table[table["metric"] == "mean_held_bytes"].set_index("think_scale")["mean"]
    assert held[1.0] > 5 * held[0.1]


def test_the_bill_adds_replica_hours_store_and_egress_at_list_prices() -> None:
    params = SimParams()
    usage = Usage(
        replica_hours=10.0, store_hours=2.0, store_ops=1_000_000, egress_bytes=10**9, calls=1
    )
    costs = bill(usage, params)
    assert replica_hour_usd(params) == pytest.approx(2 * 0.04048 + 4 * 0.004445)
    assert costs.replicas_usd == pytest.approx(10 * (2 * 0.04048 + 4 * 0.004445))
    assert costs.store_usd == pytest.approx(2 * 1.0 * 0.125 + 0.0034)
    assert costs.egress_usd == pytest.approx(0.09)
    assert costs.per_million_calls_usd(2) == pytest.approx(costs.total_usd / 2 * 1e6)


def test_a_run_bills_its_replicas_for_the_window_minus_downtime() -> None:
    from tests.labsim.runs import run

    steady = run("steady", "mrtr")
    window_h = (steady.params.horizon_s - steady.params.warmup_s) / 3600
    expected = 4 * window_h * replica_hour_usd(steady.params)
    assert steady.summary["cost_replicas_usd"] == pytest.approx(expected)
    crashed = run("crash", "mrtr")
    restart_h = crashed.params.faults[0].restart_s / 3600
    assert crashed.summary["cost_replicas_usd"] == pytest.approx(
        expected - restart_h * replica_hour_usd(crashed.params)
    )

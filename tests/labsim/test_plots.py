"""Figures: each one has a title, labelled axes with units, and a legend."""

from __future__ import annotations

import pandas as pd
import pytest
from matplotlib import pyplot as plt

from labsim import ARCHITECTURES, plots
from labsim.experiments import summarize_runs
from tests.labsim.runs import run


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def comparison() -> pd.DataFrame:
    rows = [
        {"scenario": scenario, "architecture": a, **run(scenario, a).summary}
        for scenario in ("steady", "crash")
        for a in ARCHITECTURES
    ]
    return summarize_runs(pd.DataFrame(rows), ("scenario", "architecture"))


def test_latency_cdf_draws_one_curve_per_architecture() -> None:
    figure = plots.latency_cdf([run("steady", a) for a in ARCHITECTURES])
    ax = figure.axes[0]
    assert len(ax.get_lines()) == 3
    assert "(ms" in ax.get_xlabel()
    assert ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "SSE + shared store",
        "sticky load balancer",
        "MRTR",
    ]


def test_timeline_marks_the_fault_on_every_panel() -> None:
    figure = plots.timeline([run("crash", a) for a in ARCHITECTURES])
    assert len(figure.axes) == 4
    for ax in figure.axes:
        assert ax.get_ylabel()
        crash_markers = [
            line for line in ax.get_lines() if list(line.get_xdata()) == [450.0, 450.0]
        ]
        assert crash_markers, "the crash is marked"
    assert figure.axes[-1].get_xlabel() == "simulated time (s)"
    assert "memory held (MB)" in [ax.get_ylabel() for ax in figure.axes]


def test_cost_bars_stack_the_items_of_the_bill(comparison: pd.DataFrame) -> None:
    figure = plots.cost_bars(comparison, "steady")
    ax = figure.axes[0]
    assert "USD" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["replicas", "store", "egress"]
    tallest = max(patch.get_y() + patch.get_height() for patch in ax.patches)
    per_million = comparison[
        (comparison["metric"] == "cost_per_million_calls_usd")
        & (comparison["scenario"] == "steady")
    ]["mean"]
    assert tallest == pytest.approx(per_million.max(), rel=1e-6)


def test_comparison_grid_has_a_panel_per_metric(comparison: pd.DataFrame) -> None:
    figure = plots.comparison_grid(comparison)
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert len(visible) == 6
    assert all(ax.get_ylabel() for ax in visible)
    assert figure.get_suptitle()

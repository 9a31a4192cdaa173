"""The live swarm's figures: a panel per architecture with the upgrade's steps marked, the
latency CDF of completed calls, and measured bars beside the simulation's."""

from __future__ import annotations

import pandas as pd
import pytest
from matplotlib import pyplot as plt

from lessons import figure_rules, swarm_figures


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def summary(completed: list[int], latencies_ms: list[float]) -> dict:
    """A swarm summary with the parts the figures read, as `run_scenario` writes them."""
    return {
        "timeline": [{"t": t, "completed": n, "in_flight": 2 * n} for t, n in enumerate(completed)],
        "faults": [
            {"t": 1.0, "event": "drain"},
            {"t": 2.0, "event": "stop"},
            {"t": 3.0, "event": "ready"},
            {"t": 3.5, "event": "scale"},
        ],
        "calls": [{"outcome": "completed", "latency_ms": ms} for ms in latencies_ms]
        + [{"outcome": "failed", "latency_ms": 1.0}],
    }


SUMMARIES = {
    "sticky": summary([1, 3, 0, 2], [40.0, 10.0, 20.0]),
    "mrtr": summary([2, 2, 2, 2], [15.0, 5.0]),
}


def test_timelines_draw_a_panel_per_architecture_with_the_upgrade_marked() -> None:
    figure = swarm_figures.timelines(SUMMARIES, "rolling upgrade from 1 s")
    sticky, mrtr = figure.axes
    assert sticky.get_title() == "sticky load balancer: rolling upgrade from 1 s"
    assert [bar.get_height() for bar in sticky.patches] == [1, 3, 0, 2]
    open_calls = next(line for line in sticky.get_lines() if line.get_label() == "calls open then")
    assert list(open_calls.get_ydata()) == [2, 6, 0, 4]
    marks = [line for line in mrtr.get_lines() if len(line.get_xdata()) == 2]
    assert sorted(line.get_xdata()[0] for line in marks) == [1.0, 2.0, 3.0]
    legend = [text.get_text() for text in mrtr.get_legend().get_texts()]
    assert "a replica: drain" in legend and "completed in that second" in legend
    assert mrtr.get_xlabel() == "time since the swarm started (s)"


def test_timelines_tick_whole_calls_however_few_a_second_completes() -> None:
    # Three architectures, as the notebook draws them, with three calls or fifteen at most:
    # matplotlib's own ticks would fall at halves, or at 2.5, 7.5, 12.5 (seen live, in a
    # short rolling upgrade under the shared store).
    few = {
        arch: summary([0, top, 1, 1], [10.0])
        for arch, top in (("mrtr", 3), ("sticky", 15), ("sse-store", 14))
    }
    for arch in few:
        for second in few[arch]["timeline"]:
            second["in_flight"] = 1
    figure = swarm_figures.timelines(few, "rolling upgrade from 1 s")
    figure.canvas.draw()
    assert list(figure_rules.problems(figure)) == []
    for ax in figure.axes:
        assert all(float(tick).is_integer() for tick in ax.get_yticks()), ax.get_title()


def test_latency_cdf_counts_completed_calls_only() -> None:
    figure = swarm_figures.latency_cdf(SUMMARIES, "measured")
    ax = figure.axes[0]
    sticky = next(line for line in ax.get_lines() if line.get_label() == "sticky load balancer")
    assert list(sticky.get_xdata()) == [10.0, 20.0, 40.0]
    assert list(sticky.get_ydata()) == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert "(ms" in ax.get_xlabel() and ax.get_title() == "measured"


def test_against_simulation_puts_each_measurement_beside_its_prediction() -> None:
    names = ["sticky load balancer", "MRTR"]
    predicted = pd.DataFrame({"answers asked again": [4.0, 0.0]}, index=names)
    spread = pd.DataFrame({"answers asked again": [1.0, 0.0]}, index=names)
    measured = pd.DataFrame({"answers asked again": [0, 5]}, index=names[::-1])
    figure = swarm_figures.against_simulation(
        predicted, spread, measured, ["answers asked again"], "swarm against simulation"
    )
    ax = figure.axes[0]
    heights = [bar.get_height() for bar in ax.patches]
    assert heights == [4.0, 0.0, 5.0, 0.0]
    assert [tick.get_text() for tick in ax.get_xticklabels()] == names
    assert figure.get_suptitle() == "swarm against simulation"

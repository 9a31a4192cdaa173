"""Figures: each one has a title, labelled axes with units, and a legend."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from matplotlib import pyplot as plt
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer

from labsim import ARCHITECTURES, simulate
from labsim.study import plots, scenarios
from labsim.study.experiments import summarize_runs
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


def test_timeline_keeps_the_coinciding_legacy_lines_apart() -> None:
    """The store's and the sticky balancer's series often coincide: both stay visible."""
    figure = plots.timeline([run("steady", a) for a in ARCHITECTURES])
    for ax in figure.axes:
        lines = {line.get_label(): line for line in ax.get_lines()}
        store, sticky = lines["SSE + shared store"], lines["sticky load balancer"]
        assert store.get_linewidth() > 2 * sticky.get_linewidth()
        assert sticky.get_linestyle() != "-"


def test_the_sticky_line_is_drawn_over_mrtrs_when_they_coincide() -> None:
    """Sticky and MRTR are both at zero wherever neither holds anything: the sticky line is
    dashed and on top, so MRTR's shows between its dashes."""
    figure = plots.timeline([run("steady", a) for a in ARCHITECTURES], series=("open_streams",))
    lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
    sticky, mrtr = lines["sticky load balancer"], lines["MRTR"]
    assert sticky.get_zorder() > mrtr.get_zorder() and sticky.get_linestyle() != "-"


def test_count_panels_of_a_timeline_take_whole_ticks_only() -> None:
    figure = plots.timeline([run("crash", a) for a in ARCHITECTURES], series=("replicas_up",))
    ax = figure.axes[0]
    low, high = ax.get_ylim()
    ticks = [t for t in ax.get_yticks() if low <= t <= high]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_confidence_intervals_stop_at_what_the_quantity_can_take() -> None:
    errors = plots.clipped_errors(pd.Series([0.2, 5.0, 0.9]), pd.Series([0.555, 1.0, 0.3]), 0, 1)
    # 0.2 ± 0.555 reaches down to 0 only; 0.9 ± 0.3 reaches up to 1 only.
    assert errors[0].tolist() == pytest.approx([0.2, 1.0, 0.3])
    assert errors[1].tolist() == pytest.approx([0.555, 0.0, 0.1])


def test_comparison_grid_whiskers_stop_at_zero_and_at_all() -> None:
    """A count of 0.2 ± 0.555 and a completed fraction of 0.9 ± 0.3 (as few replications
    give): whiskers from 0 to 0.755, and from 0.6 to 1."""
    comparison = pd.DataFrame(
        [
            {"scenario": "crash", "architecture": a, "metric": m, "mean": mean, "ci_half_width": h}
            for a in ARCHITECTURES
            for m, mean, h in (("state_losses", 0.2, 0.555), ("completed_fraction", 0.9, 0.3))
        ]
    )
    figure = plots.comparison_grid(
        comparison,
        (("state_losses", "calls whose state was lost", 1.0), ("completed_fraction", "done", 1.0)),
    )
    ends = []
    for ax in figure.axes[:2]:
        container = next(c for c in ax.containers if isinstance(c, BarContainer))
        segment = container.errorbar.lines[2][0].get_segments()[0]
        ends.append(sorted(y for _, y in segment))
    assert ends[0] == pytest.approx([0.0, 0.755])
    assert ends[1] == pytest.approx([0.6, 1.0])


def tidy_sweep() -> pd.DataFrame:
    """Means by architecture, arrival rate and metric, as `labsim.study.sweep` returns them."""
    rows = [
        {
            "arrival_rate_per_s": rate,
            "architecture": a,
            "metric": metric,
            "mean": rate * (k + 1) * scale,
        }
        for k, a in enumerate(ARCHITECTURES)
        for rate in (4, 1, 2)
        for metric, scale in (("p95_latency_s", 0.001), ("utilization", 0.1))
    ]
    return pd.DataFrame(rows)


def test_sweep_panels_draw_a_line_per_architecture_in_the_panels_units() -> None:
    panels = [
        plots.Panel("p95_latency_s", "p95 server latency (ms)", 1e-3),
        plots.Panel("utilization", "CPU utilization (%)", 0.01, limit=(100, "all workers busy")),
    ]
    figure = plots.sweep_panels(
        tidy_sweep(),
        "arrival_rate_per_s",
        panels,
        xlabel="arrival rate (calls/s)",
        title="growing load",
        marks=[(3, "capacity")],
        xscale="log",
        xbase=2,
    )
    latency, cpu = figure.axes
    assert figure.get_suptitle() == "growing load"
    assert latency.get_ylabel() == "p95 server latency (ms)"
    assert latency.get_title() == "P95 server latency"
    assert latency.get_xscale() == "log" and latency.get_xlabel() == "arrival rate (calls/s)"
    mrtr = next(line for line in latency.get_lines() if line.get_label() == "MRTR")
    assert list(mrtr.get_xdata()) == [1, 2, 4]
    assert list(mrtr.get_ydata()) == pytest.approx([3.0, 6.0, 12.0])
    # One legend for all panels, under them: none drawn over a panel's data.
    assert latency.get_legend() is None and cpu.get_legend() is None
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend == [
        "SSE + shared store",
        "sticky load balancer",
        "MRTR",
        "capacity",
        "all workers busy",
    ]
    busy = next(line for line in cpu.get_lines() if line.get_label() == "all workers busy")
    assert list(busy.get_ydata()) == [100, 100]


def test_sweep_panels_take_other_groups_in_the_colours_given() -> None:
    frame = tidy_sweep().replace({"architecture": {"mrtr": "offload", "sticky": "503"}})
    frame = frame[frame["architecture"] != "sse-store"]
    figure = plots.sweep_panels(
        frame,
        "arrival_rate_per_s",
        [plots.Panel("utilization", "CPU utilization (%)", 0.01)],
        xlabel="spike",
        title="policies",
        colours={"offload": "tab:blue", "503": "tab:red"},
        columns=2,
    )
    ax, spare = figure.axes
    assert not spare.get_visible()
    colours = {line.get_label(): line.get_color() for line in ax.get_lines()}
    assert colours == {"503": "tab:red", "offload": "tab:blue"}
    # A group drawn later is narrower with a smaller marker, so equal values stay visible.
    first, second = ax.get_lines()
    assert second.get_linewidth() < first.get_linewidth()
    assert second.get_markersize() < first.get_markersize()


def test_headline_bars_show_each_architectures_value_in_the_panels_unit() -> None:
    summaries = {a: run("steady", a).summary for a in ARCHITECTURES}
    figure = plots.headline_bars(
        summaries,
        [
            plots.Panel("p95_latency_s", "p95 server latency (ms)", 1e-3),
            plots.Panel("cost_per_million_calls_usd", "cost per million calls (USD)"),
        ],
        title="one run each",
    )
    latency, cost = figure.axes
    assert [tick.get_text() for tick in latency.get_xticklabels()] == [
        "SSE + shared store",
        "sticky load balancer",
        "MRTR",
    ]
    heights = [patch.get_height() for patch in latency.patches]
    assert heights == pytest.approx([s["p95_latency_s"] * 1e3 for s in summaries.values()])
    assert cost.get_ylabel() == "cost per million calls (USD)"
    assert figure.get_suptitle() == "one run each"


def test_rollout_draws_each_replica_through_drain_restart_and_the_new_version() -> None:
    results = [run("rolling-upgrade", a) for a in ("sticky", "mrtr")]
    replicas = results[0].params.cluster.replicas
    end_s = 1200.0
    figure = plots.rollout(results, start_s=380.0, end_s=end_s)
    assert len(figure.axes) == 2
    colours = {name: colour for name, colour in plots.ROLLOUT_STATES.values()}
    for ax, result in zip(figure.axes, results, strict=True):
        assert ax.get_title().startswith(plots.LABELS[result.architecture])
        assert [t.get_text() for t in ax.get_yticklabels()] == [
            f"replica {k}" for k in range(replicas)
        ]
        for replica in range(replicas):
            bars = sorted(
                (bar for bar in ax.patches if abs(bar.get_y() + 0.3 - replica) < 1e-9),
                key=lambda bar: bar.get_x(),
            )
            states = [to_hex(bar.get_facecolor()) for bar in bars]
            expected = ["up, version 1", "draining", "down (restarting)", "up, version 2"]
            assert states == [to_hex(colours[name]) for name in expected]
            # The spans tile the run without gaps, up to the end of the figure.
            for before, after in itertools.pairwise(bars):
                assert before.get_x() + before.get_width() == pytest.approx(after.get_x())
            assert bars[-1].get_x() + bars[-1].get_width() == pytest.approx(end_s)
    assert figure.axes[-1].get_xlim() == (380.0, end_s)


@pytest.mark.slow
def test_through_a_spike_draws_a_line_per_setting_over_the_shaded_spike() -> None:
    # Not `run`: a spike's queues do not settle within the window, so Little's law's check
    # on a finite window does not apply.
    results = {
        policy: simulate(
            scenarios.build("overload", shed_policy=policy, horizon_s=600.0), "mrtr", 7
        )
        for policy in ("none", "mrtr-offload")
    }
    figure = plots.through_a_spike(
        results,
        [("queued_requests", "requests queued"), ("in_flight_calls", "calls in flight")],
        {"none": "tab:grey", "mrtr-offload": "tab:blue"},
        spike=(450.0, 510.0),
        window=(400.0, 600.0),
        title="a spike",
    )
    queued, in_flight = figure.axes
    assert figure.get_suptitle() == "a spike" and in_flight.get_xlim() == (400.0, 600.0)
    none, offload = (line for line in queued.get_lines())
    assert (none.get_label(), offload.get_label()) == ("none", "mrtr-offload")
    # The later line is narrower, so where the two coincide both stay visible.
    assert offload.get_linewidth() < none.get_linewidth()
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend == ["none", "mrtr-offload", "the spike"]


@pytest.mark.slow
def test_autoscaling_marks_each_scaling_and_names_every_replica() -> None:
    results = {a: run("autoscale", a, seed=8) for a in ("sticky", "mrtr")}
    figure = plots.autoscaling(results)
    billed = figure.axes[0]
    ticks = [t for t in billed.get_yticks() if billed.get_ylim()[0] <= t <= billed.get_ylim()[1]]
    assert all(float(t).is_integer() for t in ticks)
    scalings = results["sticky"].events.query("kind in ['scale-out', 'scale-in']")
    marks = [line for line in billed.get_lines() if line.get_label() in ("scale-out", "scale-in")]
    assert len(marks) == len(scalings)
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    replicas = int(results["sticky"].replicas["replica"].max()) + 1
    assert legend == [f"replica {k}" for k in range(replicas)] + ["scale-out", "scale-in"]
    assert all(ax.get_ylabel() for ax in figure.axes)

"""Figures for a class or a design review: latency CDFs, time series, cost bars, a grid.

Every function draws on matplotlib axes (made if not given) and returns the
figure, so a notebook shows it and the CLI saves it. Each architecture keeps
one colour everywhere; units are in the axis labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from labsim.metrics import RunResult

COLOURS = {"sse-store": "tab:orange", "sticky": "tab:red", "mrtr": "tab:blue"}
LABELS = {"sse-store": "SSE + shared store", "sticky": "sticky load balancer", "mrtr": "MRTR"}
# The two legacy architectures hold the same calls, so their time series often coincide:
# the store's line is drawn wide and the sticky one dashed on top, so both stay visible.
LINES: dict[str, dict[str, Any]] = {
    "sse-store": {"linewidth": 3.0, "alpha": 0.8},
    "sticky": {"linewidth": 1.4, "linestyle": (0, (4, 2))},
    "mrtr": {"linewidth": 1.4},
}

# Event kinds drawn as vertical lines on time series.
_EVENT_KINDS = ("down", "up", "draining", "store-down", "store-up", "spike-start", "spike-end")

# (timeline column, axis label, divisor) for `timeline`.
_SERIES = {
    "in_flight_calls": ("calls in flight", 1.0),
    "held_bytes": ("memory held (MB)", 1e6),
    "open_streams": ("open SSE streams", 1.0),
    "replicas_up": ("replicas up", 1.0),
    "busy_workers": ("busy workers", 1.0),
    "queued_requests": ("queued requests", 1.0),
}


def _label(architecture: str) -> str:
    return LABELS.get(architecture, architecture)


def latency_cdf(results: Sequence[RunResult], ax: Axes | None = None) -> Figure:
    """Empirical CDF of server latency (think time excluded) of completed calls, per run."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for result in results:
        calls = result.measured_calls()
        latency_ms = np.sort(calls.loc[calls["outcome"] == "completed", "server_latency_s"]) * 1e3
        if len(latency_ms) == 0:
            continue
        share = np.arange(1, len(latency_ms) + 1) / len(latency_ms)
        ax.step(
            latency_ms,
            share,
            where="post",
            color=COLOURS.get(result.architecture),
            label=_label(result.architecture),
        )
    ax.set_xscale("log")
    ax.set_xlabel("server latency per call, think time excluded (ms, log scale)")
    ax.set_ylabel("fraction of completed calls")
    ax.set_title("Latency distribution")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return cast(Figure, ax.figure)


def _mark_events(ax: Axes, events: pd.DataFrame, colour: str | None) -> None:
    for time_s, kind in zip(events["time_s"], events["kind"], strict=True):
        if kind in _EVENT_KINDS:
            ax.axvline(time_s, color=colour, linestyle=":", linewidth=1, alpha=0.6)


def timeline(
    results: Sequence[RunResult],
    series: Sequence[str] = ("in_flight_calls", "held_bytes", "open_streams", "replicas_up"),
) -> Figure:
    """Time series of the cluster, one panel per quantity, with fault events marked."""
    fig, axes = plt.subplots(len(series), 1, figsize=(8, 2.2 * len(series)), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, column in zip(axes, series, strict=True):
        label, divisor = _SERIES[column]
        for result in results:
            frame = result.timeline
            ax.plot(
                frame["time_s"],
                frame[column] / divisor,
                color=COLOURS.get(result.architecture),
                label=_label(result.architecture),
                **LINES.get(result.architecture, {}),
            )
        for result in results:
            _mark_events(ax, result.events, COLOURS.get(result.architecture))
        if results:
            ax.axvspan(0, results[0].params.warmup_s, color="grey", alpha=0.1, linewidth=0)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="upper left", fontsize="small")
    axes[0].set_title("The cluster over time (grey: warm-up; dotted: each run's fault events)")
    axes[-1].set_xlabel("simulated time (s)")
    fig.tight_layout()
    return fig


#: A replica's states in a rolling upgrade: legend and colour, in the order it goes through.
ROLLOUT_STATES = {
    "v1": ("up, version 1", "tab:grey"),
    "draining": ("draining", "gold"),
    "down": ("down (restarting)", "tab:red"),
    "v2": ("up, version 2", "tab:green"),
}


def _replica_spans(result: RunResult, end_s: float) -> list[list[tuple[float, float, str]]]:
    """Per replica, its (start s, end s, state) spans, read from the run's fault events."""
    replicas = result.params.cluster.replicas
    spans: list[list[tuple[float, float, str]]] = [[] for _ in range(replicas)]
    current = [(0.0, "v1")] * replicas
    for time_s, kind, replica, detail in result.events.itertuples(index=False):
        if 0 <= replica < replicas and kind in ("draining", "down", "up"):
            spans[replica].append((current[replica][0], time_s, current[replica][1]))
            current[replica] = (time_s, detail if kind == "up" else kind)
    for replica, (start, state) in enumerate(current):
        spans[replica].append((start, end_s, state))
    return spans


def rollout(results: Sequence[RunResult], start_s: float, end_s: float) -> Figure:
    """A rolling upgrade replica by replica, a panel per run: up, draining, down, upgraded."""
    replicas = max(result.params.cluster.replicas for result in results)
    fig, axes = plt.subplots(
        len(results), 1, figsize=(10, 0.5 * replicas * len(results) + 1.5), sharex=True
    )
    for ax, result in zip(np.atleast_1d(axes), results, strict=True):
        for replica, spans in enumerate(_replica_spans(result, end_s)):
            for start, stop, state in spans:
                colour = ROLLOUT_STATES.get(state, (state, "black"))[1]
                ax.barh(replica, stop - start, left=start, color=colour, height=0.6)
        ax.set_yticks(range(replicas), [f"replica {k}" for k in range(replicas)])
        duration_s = result.summary["upgrade_duration_s"]
        ax.set_title(f"{_label(result.architecture)}: the rollout takes {duration_s:.0f} s")
        ax.invert_yaxis()
    ax.set_xlim(start_s, end_s)
    ax.set_xlabel("simulated time (s)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for _, c in ROLLOUT_STATES.values()]
    legends = [name for name, _ in ROLLOUT_STATES.values()]
    fig.legend(handles, legends, ncol=4, loc="upper center", bbox_to_anchor=(0.5, 1.03))
    fig.tight_layout()
    return fig


def _pivot(comparison: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Means and CI half-widths of a metric, groups by architectures, in first-seen order."""
    rows = comparison[comparison["metric"] == metric]
    index = "scenario" if "scenario" in rows else rows.columns[0]
    groups = list(dict.fromkeys(rows[index]))
    architectures = list(dict.fromkeys(rows["architecture"]))
    means = rows.pivot(index=index, columns="architecture", values="mean")
    errors = rows.pivot(index=index, columns="architecture", values="ci_half_width")
    return (
        means.loc[groups, architectures],
        errors.loc[groups, architectures].fillna(0.0),
    )


def cost_bars(comparison: pd.DataFrame, scenario: str = "steady", ax: Axes | None = None) -> Figure:
    """Cost per million calls by item (replicas, store, egress), one bar per architecture."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    rows = comparison[comparison["scenario"] == scenario]
    table = rows.pivot(index="architecture", columns="metric", values="mean")
    per_million = 1e6 / table["calls"]
    bottom = np.zeros(len(table))
    items = (
        ("cost_replicas_usd", "replicas"),
        ("cost_store_usd", "store"),
        ("cost_egress_usd", "egress"),
    )
    for column, label in items:
        heights = (table[column] * per_million).to_numpy()
        ax.bar([_label(a) for a in table.index], heights, bottom=bottom, label=label)
        bottom += heights
    ax.set_ylabel("cost per million calls (USD)")
    ax.set_title(f"Who pays: {scenario}")
    ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    return cast(Figure, ax.figure)


def comparison_grid(
    comparison: pd.DataFrame,
    metrics: Sequence[tuple[str, str, float]] = (
        ("completed_fraction", "completed (fraction)", 1.0),
        ("state_losses", "calls whose state was lost", 1.0),
        ("re_prompts", "answers asked again", 1.0),
        ("p95_latency_s", "p95 server latency (s)", 1.0),
        ("peak_held_bytes", "peak memory held (MB)", 1e6),
        ("cost_per_million_calls_usd", "cost per million calls (USD)", 1.0),
    ),
) -> Figure:
    """A panel per metric; grouped bars per scenario, one colour per architecture, 95% CI.

    `metrics` are (summary metric, axis label with unit, divisor) triples.
    """
    columns = 2
    rows = int(np.ceil(len(metrics) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(12, 3.2 * rows), squeeze=False)
    for ax, (metric, label, divisor) in zip(axes.flat, metrics, strict=False):
        means, errors = _pivot(comparison, metric)
        means, errors = means / divisor, errors / divisor
        architectures = list(means.columns)
        width = 0.8 / max(len(architectures), 1)
        x = np.arange(len(means.index))
        for k, architecture in enumerate(architectures):
            ax.bar(
                x + (k - (len(architectures) - 1) / 2) * width,
                means[architecture],
                width,
                yerr=errors[architecture],
                color=COLOURS.get(architecture),
                label=_label(architecture),
                capsize=2,
            )
        ax.set_xticks(x, means.index, rotation=20, ha="right", fontsize="small")
        ax.set_ylabel(label)
        ax.grid(True, axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize="small")
    fig.suptitle("Architectures compared, scenario by scenario (bars: mean; whiskers: 95% CI)")
    fig.tight_layout()
    return fig


def write_figures(
    folder: Path, comparison: pd.DataFrame, names: list[str], seed: int, overrides: dict[str, Any]
) -> None:
    """The figures of a `compare` run as PNG files: the grid, the bill, and per scenario
    the latency CDFs and timelines of one seeded run of each architecture."""
    from labsim import scenarios
    from labsim.simulation import ARCHITECTURES, simulate

    plt.switch_backend("Agg")
    folder.mkdir(parents=True, exist_ok=True)
    comparison_grid(comparison).savefig(folder / "comparison_grid.png", dpi=120)
    cost_bars(comparison, names[0]).savefig(folder / "cost_bars.png", dpi=120)
    for name in names:
        params = scenarios.build(name, **overrides)
        results = [simulate(params, a, seed) for a in ARCHITECTURES]
        latency_cdf(results).savefig(folder / f"latency_cdf_{name}.png", dpi=120)
        timeline(results).savefig(folder / f"timeline_{name}.png", dpi=120)
        plt.close("all")


def share_sweep(
    frame: pd.DataFrame,
    metrics: Sequence[tuple[str, str, float]] = (
        ("cost_per_million_calls_usd", "cost per million calls (USD)", 1.0),
        ("store_share_of_bill", "store's share of the bill", 1.0),
        ("mean_held_bytes", "mean memory held (MB)", 1e6),
    ),
) -> Figure:
    """A metric per panel against the share of calls to persistent tools, per architecture.

    `frame` is `labsim.persistent_sweep.share_sweep`'s; whiskers are 95% CIs.
    """
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
    for ax, (metric, label, divisor) in zip(axes.flat, metrics, strict=True):
        rows = frame[frame["metric"] == metric]
        for architecture, group in rows.groupby("architecture", sort=False):
            group = group.sort_values("persistent_share")
            ax.errorbar(
                group["persistent_share"] * 100,
                group["mean"] / divisor,
                yerr=group["ci_half_width"].fillna(0.0) / divisor,
                marker="o",
                capsize=2,
                color=COLOURS.get(str(architecture)),
                label=_label(str(architecture)),
            )
        ax.set_xlabel("calls to persistent tools (%)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes.flat[0].legend(fontsize="small")
    fig.suptitle("Persistent tools: what MRTR keeps and what it gives back, share by share")
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class Panel:
    """One panel of a figure: a metric, its axis label with unit, and how to draw it.

    `divisor` turns the metric's unit into the label's; `yscale` is "linear", "log" or
    "symlog" (counts that span decades and include zero); `limit` is a horizontal line
    (value in the label's unit, its legend).
    """

    metric: str
    label: str
    divisor: float = 1.0
    yscale: str = "linear"
    limit: tuple[float, str] | None = None


def _style(group: str, colours: Mapping[str, str] | None) -> dict[str, Any]:
    """Architectures keep their colour, name and line style; other groups take `colours`."""
    if colours is None:
        return {"color": COLOURS.get(group), "label": _label(group), **LINES.get(group, {})}
    return {"color": colours.get(group), "label": group}


def _finish_panel(ax: Axes, panel: Panel) -> None:
    if panel.limit is not None:
        ax.axhline(panel.limit[0], color="grey", linestyle="--", label=panel.limit[1])
    if panel.yscale == "symlog":
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(bottom=0)
    else:
        ax.set_yscale(panel.yscale)
    ax.set_ylabel(panel.label)
    title = panel.label.split(" (")[0]
    ax.set_title(title[:1].upper() + title[1:])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")


def sweep_panels(
    tidy: pd.DataFrame,
    x: str,
    panels: Sequence[Panel],
    *,
    xlabel: str,
    title: str,
    by: str = "architecture",
    colours: Mapping[str, str] | None = None,
    xscale: str = "linear",
    xbase: float = 10,
    marks: Sequence[tuple[float, str]] = (),
    columns: int | None = None,
) -> Figure:
    """Means of metrics against a swept parameter: a panel per metric, a line per `by` value.

    `tidy` has the columns `x`, `by`, metric and mean (as `labsim.sweep` returns them);
    `marks` are vertical lines (x value, legend) drawn on every panel.
    """
    columns = columns or len(panels)
    rows = int(np.ceil(len(panels) / columns))
    fig, axes = plt.subplots(
        rows, columns, figsize=(4.4 * columns, 3.6 * rows), squeeze=False, sharex=True
    )
    for ax, panel in zip(axes.flat, panels, strict=False):
        chosen = tidy[tidy["metric"] == panel.metric]
        for group, line in chosen.groupby(by, sort=False):
            line = line.sort_values(x)
            ax.plot(
                line[x], line["mean"] / panel.divisor, marker="o", **_style(str(group), colours)
            )
        for value, label in marks:
            ax.axvline(value, color="black", linestyle=":", label=label)
        if xscale == "log":
            ax.set_xscale("log", base=xbase)
        _finish_panel(ax, panel)
    for ax in axes[-1]:
        ax.set_xlabel(xlabel)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def headline_bars(
    summaries: Mapping[str, Mapping[str, float]], panels: Sequence[Panel], *, title: str
) -> Figure:
    """A bar per architecture for each metric of one run each (`summaries` by architecture)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4), squeeze=False)
    names = [_label(a) for a in summaries]
    colours = [COLOURS.get(a) for a in summaries]
    for ax, panel in zip(axes.flat, panels, strict=True):
        values = [summary[panel.metric] / panel.divisor for summary in summaries.values()]
        ax.bar(names, values, color=colours, label=names)
        ax.tick_params(axis="x", labelrotation=15)
        _finish_panel(ax, panel)
    fig.suptitle(title)
    fig.tight_layout()
    return fig

"""Figures of comparisons: the results of many runs, mean and 95% CI per architecture.

`comparison_grid` and `cost_bars` draw what `compare` returns, `share_sweep` what
`labsim.study.persistent_sweep.share_sweep` returns; `write_figures` saves the
figures of a `labsim compare` run, given the comparison and one run of each
architecture per scenario.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from labsim.model.metrics import RunResult, bounds, clipped_interval
from labsim.study.plots.panels import legend_below
from labsim.study.plots.runs import latency_cdf, timeline
from labsim.study.plots.style import COLOURS, LINES, MARKERS, legend_label


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


def clipped_errors(
    means: pd.Series, half_widths: pd.Series, low: float = 0.0, high: float = np.inf
) -> np.ndarray:
    """Error bars (below, above) for `means` ± `half_widths`, clipped to [low, high]: a
    count's interval never reaches below zero, a fraction's never above one."""
    ends = [clipped_interval(m, w, low, high) for m, w in zip(means, half_widths, strict=True)]
    below = [max(m - lo, 0.0) for m, (lo, _) in zip(means, ends, strict=True)]
    above = [max(hi - m, 0.0) for m, (_, hi) in zip(means, ends, strict=True)]
    return np.vstack([np.asarray(below, dtype=float), np.asarray(above, dtype=float)])


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
        ax.bar([legend_label(a) for a in table.index], heights, bottom=bottom, label=label)
        bottom += heights
    ax.set_ylabel("cost per million calls (USD)")
    ax.set_title(f"Who pays: {scenario}")
    # Under the bars' names, not over the bars.
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize="small", frameon=False
    )
    ax.grid(True, axis="y", alpha=0.3)
    figure = cast(Figure, ax.figure)
    figure.tight_layout()
    return figure


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
    """A panel per metric; grouped bars per scenario, one colour per architecture, 95% CI
    (clipped to what the metric can take: none below zero, no fraction above one).

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
        high = bounds(metric)[1] / divisor
        for k, architecture in enumerate(architectures):
            ax.bar(
                x + (k - (len(architectures) - 1) / 2) * width,
                means[architecture],
                width,
                yerr=clipped_errors(means[architecture], errors[architecture], 0.0, high),
                color=COLOURS.get(architecture),
                label=legend_label(architecture),
                capsize=2,
            )
        ax.set_xticks(x, means.index, rotation=20, ha="right", fontsize="small")
        ax.set_ylabel(label)
        ax.grid(True, axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle("Architectures compared, scenario by scenario (bars: mean; whiskers: 95% CI)")
    legend_below(fig, list(axes.flat)[:1])
    return fig


def share_sweep(
    frame: pd.DataFrame,
    metrics: Sequence[tuple[str, str, float]] = (
        ("cost_per_million_calls_usd", "cost per million calls (USD)", 1.0),
        ("store_share_of_bill", "store's share of the bill", 1.0),
        ("mean_held_bytes", "mean memory held (MB)", 1e6),
    ),
) -> Figure:
    """A metric per panel against the share of calls to persistent tools, per architecture.

    `frame` is `labsim.study.persistent_sweep.share_sweep`'s; whiskers are 95% CIs.
    """
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
    for ax, (metric, label, divisor) in zip(axes.flat, metrics, strict=True):
        rows = frame[frame["metric"] == metric]
        for architecture, group in rows.groupby("architecture", sort=False):
            group = group.sort_values("persistent_share")
            name = str(architecture)
            means = group["mean"] / divisor
            ax.errorbar(
                group["persistent_share"] * 100,
                means,
                yerr=clipped_errors(means, group["ci_half_width"].fillna(0.0) / divisor),
                capsize=2,
                color=COLOURS.get(name),
                label=legend_label(name),
                **LINES.get(name, {}),
                **MARKERS.get(name, {"marker": "o"}),
            )
        ax.set_xlabel("calls to persistent tools (%)")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    fig.suptitle("Persistent tools: what MRTR keeps and what it gives back, share by share")
    legend_below(fig, list(axes.flat)[:1])
    return fig


def write_figures(
    folder: Path, comparison: pd.DataFrame, runs: Mapping[str, Sequence[RunResult]]
) -> None:
    """The figures of a `compare` run as PNG files: the grid, the bill of the first
    scenario, and per scenario the latency CDFs and timelines of `runs[scenario]` (one
    seeded run of each architecture)."""
    plt.switch_backend("Agg")
    folder.mkdir(parents=True, exist_ok=True)
    comparison_grid(comparison).savefig(folder / "comparison_grid.png", dpi=120)
    cost_bars(comparison, next(iter(runs))).savefig(folder / "cost_bars.png", dpi=120)
    for name, results in runs.items():
        latency_cdf(results).savefig(folder / f"latency_cdf_{name}.png", dpi=120)
        timeline(results).savefig(folder / f"timeline_{name}.png", dpi=120)
        plt.close("all")

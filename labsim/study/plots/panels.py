"""Figures of sweeps and headlines: a panel per metric, drawn as the notebooks ask.

A `Panel` names a metric, its label and its scale; `sweep_panels` draws metrics
against a swept parameter, `headline_bars` a bar per architecture of one run each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from labsim.study.plots.style import COLOURS, LINES, MARKERS, group_line, legend_label


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


def _style(group: str, colours: Mapping[str, str] | None, position: int) -> dict[str, Any]:
    """Architectures keep their colour, name, line style and marker; other groups take
    `colours` and a line style by the order they are drawn (`group_line`), so groups with
    the same values stay visible one over another."""
    if colours is None:
        return {
            "color": COLOURS.get(group),
            "label": legend_label(group),
            **LINES.get(group, {}),
            **MARKERS.get(group, {"marker": "o"}),
        }
    return {"color": colours.get(group), "label": group, **group_line(position)}


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


def legend_below(fig: Figure, axes: Sequence[Axes], columns: int = 4) -> None:
    """One legend for every panel, under them, so that it covers no data; then lay out."""
    named: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            named.setdefault(label, handle)
    rows = int(np.ceil(len(named) / columns)) if named else 0
    height_in = 0.3 * rows + 0.15 if rows else 0.0
    if named:
        fig.legend(
            list(named.values()),
            list(named),
            loc="lower center",
            ncol=min(columns, len(named)),
            fontsize="small",
            frameon=False,
        )
    fig.tight_layout(rect=(0, height_in / fig.get_figheight(), 1, 1))


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

    `tidy` has the columns `x`, `by`, metric and mean (as `labsim.study.sweep` returns them);
    `marks` are vertical lines (x value, legend) drawn on every panel.
    """
    columns = columns or len(panels)
    rows = int(np.ceil(len(panels) / columns))
    fig, axes = plt.subplots(
        rows, columns, figsize=(4.4 * columns, 3.6 * rows), squeeze=False, sharex=True
    )
    for ax, panel in zip(axes.flat, panels, strict=False):
        chosen = tidy[tidy["metric"] == panel.metric]
        for position, (group, line) in enumerate(chosen.groupby(by, sort=False)):
            line = line.sort_values(x)
            ax.plot(line[x], line["mean"] / panel.divisor, **_style(str(group), colours, position))
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
    legend_below(fig, list(axes.flat)[: len(panels)])
    return fig


def headline_bars(
    summaries: Mapping[str, Mapping[str, float]], panels: Sequence[Panel], *, title: str
) -> Figure:
    """A bar per architecture for each metric of one run each (`summaries` by architecture)."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4), squeeze=False)
    names = [legend_label(a) for a in summaries]
    colours = [COLOURS.get(a) for a in summaries]
    for ax, panel in zip(axes.flat, panels, strict=True):
        values = [summary[panel.metric] / panel.divisor for summary in summaries.values()]
        # The bars are named on their axis; a legend would only repeat the names.
        ax.bar(names, values, color=colours)
        ax.tick_params(axis="x", labelrotation=15)
        _finish_panel(ax, panel)
    fig.suptitle(title)
    legend_below(fig, list(axes.flat))
    return fig

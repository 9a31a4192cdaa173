"""What every figure a notebook shows must have for a class to read it, checked as it is shown.

`problems(figure)` lists what a drawn figure lacks: a title; labelled axes (or axes
labelled by their categories, or by a neighbour they share); data on every panel; a
legend naming every series where a panel has several, and not drawn over the data;
every series visible (two lines with the same data must not hide one another); whole
ticks on an axis that counts (replicas, calls); error bars that stay at or above zero
for a quantity that never goes below it.

`install(path)` runs the check on every figure a kernel renders (the inline backend and
`display` both print a figure through its canvas), writing one JSON line per figure to
`path`; the notebook tests install it in the kernel before a notebook runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.collections import LineCollection
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

#: Axis labels whose first word names a thing counted: their ticks must be whole numbers.
COUNTED = ("replicas", "calls", "answers", "tasks", "requests", "rounds", "users", "streams")


def problems(figure: Figure) -> list[str]:
    """What `figure` (drawn) lacks for a reader, one sentence each; empty if nothing."""
    figure.canvas.draw()
    found: list[str] = []
    panels = [ax for ax in figure.axes if ax.get_visible() and not _is_colorbar(ax)]
    if not _title(figure, panels):
        found.append("the figure has no title (suptitle or panel title)")
    legends = _legends(figure)
    shown = {text for legend in legends for text in _legend_texts(legend)}
    for ax in panels:
        name = _name(ax)
        if not _has_data(ax):
            found.append(f"{name}: the panel is empty")
            continue
        found += [f"{name}: {problem}" for problem in _labels(ax)]
        series = _series(ax)
        if len(series) >= 2 and not legends:
            found.append(f"{name}: {len(series)} series and no legend")
        unnamed = [label for label in _labels_of(ax) if label not in shown]
        if len(series) >= 2 and unnamed:
            found.append(f"{name}: series not in any legend: {unnamed}")
        found += [f"{name}: {problem}" for problem in _hidden_lines(ax)]
        found += [f"{name}: {problem}" for problem in _fractional_counts(ax)]
        found += [f"{name}: {problem}" for problem in _errors_below_zero(ax)]
    for legend in legends:
        found += _legend_over_data(legend, panels)
    return found


def install(path: Path) -> Callable[[], None]:
    """Check every figure this process renders, one JSON line each in `path`; returns what
    undoes it."""
    original = FigureCanvasBase.print_figure

    def print_and_check(canvas: FigureCanvasBase, *args: Any, **kwargs: Any) -> Any:
        printed = original(canvas, *args, **kwargs)
        figure = canvas.figure
        if isinstance(figure, Figure):
            record = {"figure": describe(figure), "problems": problems(figure)}
            with path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")
        return printed

    def uninstall() -> None:
        FigureCanvasBase.print_figure = original  # type: ignore[method-assign]

    FigureCanvasBase.print_figure = print_and_check  # type: ignore[method-assign,assignment]
    return uninstall


def describe(figure: Figure) -> str:
    """A figure by its titles, for a report."""
    titles = [figure.get_suptitle()] + [ax.get_title() for ax in figure.axes]
    return " | ".join(t for t in titles if t) or "(untitled)"


def _is_colorbar(ax: Axes) -> bool:
    return hasattr(ax, "_colorbar") or ax.get_label() == "<colorbar>"


def _name(ax: Axes) -> str:
    return repr(ax.get_title() or ax.get_ylabel() or "a panel")


def _title(figure: Figure, panels: list[Axes]) -> bool:
    titles = [figure.get_suptitle()] + [
        ax.get_title(loc) for ax in panels for loc in ("left", "center", "right")
    ]
    return any(t.strip() for t in titles)


def _has_data(ax: Axes) -> bool:
    for line in ax.lines:
        if np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any():
            return True
    return bool(ax.patches or ax.collections or ax.images or ax.containers)


def _categorical(axis: Any) -> bool:
    """Whether the axis is labelled by its categories (tick labels that are not numbers)."""
    for label in axis.get_ticklabels():
        text = label.get_text().replace("\N{MINUS SIGN}", "-").replace(",", "").strip()
        if text and not re.fullmatch(r"[-+]?[\d.]+(e[-+]?\d+)?%?|\$.*\$", text):
            return True
    return False


def _labels(ax: Axes) -> Iterator[str]:
    for which, axis, label, siblings in (
        ("x", ax.xaxis, ax.get_xlabel(), ax.get_shared_x_axes().get_siblings(ax)),
        ("y", ax.yaxis, ax.get_ylabel(), ax.get_shared_y_axes().get_siblings(ax)),
    ):
        if label.strip() or _categorical(axis):
            continue
        shared = [getattr(other, f"get_{which}label")() for other in siblings if other is not ax]
        if not any(text.strip() for text in shared):
            yield f"the {which} axis has no label"


def _series(ax: Axes) -> list[Any]:
    """The data series of a panel: its labelled handles, and its unlabelled data lines."""
    handles, _ = ax.get_legend_handles_labels()
    in_containers = _container_lines(ax)
    unlabelled = [
        line
        for line in ax.lines
        if str(line.get_label()).startswith("_") and id(line) not in in_containers
    ]
    return [*handles, *unlabelled]


def _flatten(container: Any) -> Iterator[Any]:
    for item in container:
        if isinstance(item, tuple | list):
            yield from _flatten(item)
        elif item is not None:
            yield item


def _labels_of(ax: Axes) -> list[str]:
    return list(dict.fromkeys(ax.get_legend_handles_labels()[1]))


def _legends(figure: Figure) -> list[Legend]:
    legends = list(figure.legends)
    legends += [legend for ax in figure.axes if (legend := ax.get_legend()) is not None]
    return [legend for legend in legends if legend.get_visible()]


def _legend_texts(legend: Legend) -> list[str]:
    return [text.get_text() for text in legend.get_texts()]


def _data_line(line: Line2D) -> bool:
    """A visible line that draws data (not a vertical or horizontal mark across the panel)."""
    if line.axes is None or line.get_transform() != line.axes.transData:
        return False
    if not line.get_visible():
        return False
    if line.get_linestyle() in ("None", "", " ") and not _has_marker(line):
        return False
    return len(np.atleast_1d(line.get_xdata())) >= 2


def _has_marker(line: Line2D) -> bool:
    return line.get_marker() not in (None, "None", "", " ")


def _container_lines(ax: Axes) -> set[int]:
    return {
        id(artist)
        for container in ax.containers
        for artist in _flatten(container)
        if isinstance(artist, Line2D)
    }


def _hidden_lines(ax: Axes) -> Iterator[str]:
    inside = _container_lines(ax)
    lines = [line for line in ax.lines if _data_line(line) and id(line) not in inside]
    for below, above in combinations(sorted(lines, key=Line2D.get_zorder), 2):
        x1, y1 = _xy(below)
        x2, y2 = _xy(above)
        if x1.shape != x2.shape or not (np.allclose(x1, x2) and _same(y1, y2)):
            continue
        if not _shows_through(below, above):
            yield (
                f"{below.get_label()!r} is hidden under {above.get_label()!r} "
                "(same data, drawn the same way)"
            )


def _xy(line: Line2D) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.asarray(line.get_xdata(), dtype=float),
        np.asarray(line.get_ydata(), dtype=float),
    )


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, equal_nan=True))


def _shows_through(below: Line2D, above: Line2D) -> bool:
    """Whether a line drawn on top of another with the same data leaves it visible: the
    top line is broken (dashed, dotted) or narrower, and so are its markers if any."""
    line_visible = above.get_linestyle() not in ("-", "solid") or (
        above.get_linewidth() < below.get_linewidth()
    )
    if not (_has_marker(below) and _has_marker(above)):
        return line_visible
    markers_visible = above.get_marker() != below.get_marker() or (
        above.get_markersize() < below.get_markersize()
    )
    return line_visible and markers_visible


def _fractional_counts(ax: Axes) -> Iterator[str]:
    for which, axis, label in (("x", ax.xaxis, ax.get_xlabel()), ("y", ax.yaxis, ax.get_ylabel())):
        text = label.strip().lower()
        if not text or re.search(r"\((?!of \d)[^)]*\)", text) or _categorical(axis):
            continue
        if text.split()[0] not in COUNTED or axis.get_scale() != "linear":
            continue
        low, high = sorted(getattr(ax, f"get_{which}lim")())
        ticks = [t for t in axis.get_ticklocs() if low - 1e-9 <= t <= high + 1e-9]
        fractional = [t for t in ticks if abs(t - round(t)) > 1e-9]
        if fractional:
            yield f"the {which} axis counts {label!r} but has fractional ticks {fractional}"


def _errors_below_zero(ax: Axes) -> Iterator[str]:
    for container in ax.containers:
        errorbar = None
        heights: list[float] = []
        if isinstance(container, BarContainer):
            errorbar = container.errorbar
            heights = [patch.get_height() for patch in container.patches]
        elif isinstance(container, ErrorbarContainer):
            errorbar = container
            data_line = container.lines[0]
            if data_line is not None:
                heights = list(np.asarray(data_line.get_ydata(), dtype=float))
        if errorbar is None or not heights or min(heights) < 0:
            continue
        for collection in errorbar.lines[2]:
            if not isinstance(collection, LineCollection):
                continue
            lowest = min(
                (float(np.min(np.asarray(segment)[:, 1])) for segment in collection.get_segments()),
                default=0.0,
            )
            if lowest < -1e-12:
                label = container.get_label()
                yield (
                    f"error bars of {label!r} go below zero ({lowest:.3g}) "
                    "for a quantity that does not"
                )


def _legend_over_data(legend: Legend, panels: list[Axes]) -> Iterator[str]:
    box = legend.get_window_extent()
    for ax in panels:
        if not box.overlaps(ax.get_window_extent()):
            continue
        covered = _covered_points(ax, box) + _covered_bars(ax, box)
        if covered:
            texts = ", ".join(_legend_texts(legend)[:3])
            yield f"{_name(ax)}: the legend ({texts}) is drawn over {covered} data point(s)"


def _covered_points(ax: Axes, box: Bbox) -> int:
    view = ax.get_window_extent()
    covered = 0
    for line in ax.lines:
        if not _data_line(line):
            continue
        x, y = _xy(line)
        finite = np.isfinite(x) & np.isfinite(y)
        points = ax.transData.transform(np.column_stack([x[finite], y[finite]]))
        inside_view = (
            (points[:, 0] >= view.x0)
            & (points[:, 0] <= view.x1)
            & (points[:, 1] >= view.y0)
            & (points[:, 1] <= view.y1)
        )
        in_box = (
            (points[:, 0] > box.x0)
            & (points[:, 0] < box.x1)
            & (points[:, 1] > box.y0)
            & (points[:, 1] < box.y1)
        )
        covered += int(np.sum(inside_view & in_box))
    return covered


def _covered_bars(ax: Axes, box: Bbox) -> int:
    covered = 0
    for container in ax.containers:
        if not isinstance(container, BarContainer):
            continue
        for patch in container.patches:
            extent = patch.get_window_extent()
            if extent.width > 0 and extent.height > 0 and _area_overlap(extent, box) > 4.0:
                covered += 1
    return covered


def _area_overlap(a: Bbox, b: Bbox) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)

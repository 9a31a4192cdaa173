"""A kernel start-up file for the light-install test: which Python the kernel runs, what it
can reach, and every figure it draws with the plots in it that show no data.

JupyterLab's kernel runs it from its IPython profile (the test copies it into
`profile_default/startup/`) before the notebook's first cell. Pixels cannot tell an empty
plot from a sparse one (a black line and four dots colour fewer pixels than an empty
plot's legend), so the census asks matplotlib: a plot shows data when a line, a collection,
a patch or an image is drawn in its data coordinates (a reference line across the whole
plot, `axvline`, does not count). Each record is a JSON line in the file $MRTR_FIGURE_CENSUS.
"""

from __future__ import annotations


def _take_figure_census() -> None:
    import importlib.util
    import json
    import os
    import shutil
    import sys
    from typing import Any

    from matplotlib.axes import Axes
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.figure import Figure

    census_path = os.environ["MRTR_FIGURE_CENSUS"]

    def record(entry: dict[str, Any]) -> None:
        with open(census_path, "a", encoding="utf-8") as census:
            census.write(json.dumps(entry) + "\n")

    def in_data_coordinates(artist: Any, axes: Axes) -> bool:
        return bool(artist.get_transform().contains_branch(axes.transData))

    def shows_data(axes: Axes) -> bool:
        for line in axes.lines:
            if in_data_coordinates(line, axes) and len(line.get_xdata()) > 0:
                return True
        for collection in axes.collections:
            if len(collection.get_offsets()) > 0 or len(collection.get_paths()) > 0:
                return True
        for patch in axes.patches:
            if in_data_coordinates(patch, axes):
                return True
        return bool(axes.images)

    def plots(figure: Figure) -> list[Axes]:
        """The figure's plots: axes drawn with their frame (a text panel turns it off)."""
        return [axes for axes in figure.axes if axes.get_visible() and axes.axison]

    def census(figure: Figure) -> None:
        title = figure.get_suptitle() or "; ".join(a.get_title() for a in figure.axes)
        shown = plots(figure)
        empty = [
            axes.get_title() or f"plot {i + 1}"
            for i, axes in enumerate(shown)
            if not shows_data(axes)
        ]
        record({"figure": title, "plots": len(shown), "empty": empty})

    print_figure = FigureCanvasBase.print_figure

    def print_figure_counted(self: FigureCanvasBase, *args: Any, **kwargs: Any) -> Any:
        try:
            census(self.figure)
        except Exception as error:
            record({"census_error": repr(error)})
        return print_figure(self, *args, **kwargs)

    FigureCanvasBase.print_figure = print_figure_counted  # type: ignore[method-assign]
    programs = ("haproxy", "redis-server", "node")
    record(
        {
            "python": sys.executable,
            "programs": {name: shutil.which(name) for name in programs},
            "load_test_packages": [
                name for name in ("locust", "gevent", "flask") if importlib.util.find_spec(name)
            ],
        }
    )


_take_figure_census()
del _take_figure_census

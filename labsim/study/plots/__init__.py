"""Figures for a class or a design review: latency CDFs, time series, cost bars, a grid.

Every function draws on matplotlib axes (made if not given) and returns the
figure, so a notebook shows it and the CLI saves it. Each architecture keeps
one colour everywhere (`style`); units are in the axis labels. Figures draw
results; they run no simulation.
"""

from labsim.study.plots.comparisons import (
    clipped_errors,
    comparison_grid,
    cost_bars,
    share_sweep,
    write_figures,
)
from labsim.study.plots.load_runs import autoscaling, through_a_spike
from labsim.study.plots.panels import Panel, headline_bars, sweep_panels
from labsim.study.plots.runs import ROLLOUT_STATES, latency_cdf, rollout, timeline
from labsim.study.plots.style import COLOURS, LABELS, LINES

__all__ = [
    "COLOURS",
    "LABELS",
    "LINES",
    "ROLLOUT_STATES",
    "Panel",
    "autoscaling",
    "clipped_errors",
    "comparison_grid",
    "cost_bars",
    "headline_bars",
    "latency_cdf",
    "rollout",
    "share_sweep",
    "sweep_panels",
    "through_a_spike",
    "timeline",
    "write_figures",
]

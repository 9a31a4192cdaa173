"""Figures of single runs: latency distributions, the cluster over time, a rollout.

Each function takes `RunResult`s (one per architecture, usually of the same seed) and
draws them; it runs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from labsim.model.metrics import RunResult
from labsim.study.plots.style import COLOURS, LINES, legend_label

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
# Series that count things, whose axes take whole ticks only.
_COUNTS = frozenset(set(_SERIES) - {"held_bytes"})


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
            label=legend_label(result.architecture),
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
                label=legend_label(result.architecture),
                **LINES.get(result.architecture, {}),
            )
        for result in results:
            _mark_events(ax, result.events, COLOURS.get(result.architecture))
        if results:
            ax.axvspan(0, results[0].params.warmup_s, color="grey", alpha=0.1, linewidth=0)
        ax.set_ylabel(label)
        if column in _COUNTS:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
    fig.suptitle("The cluster over time (grey: warm-up; dotted: each run's fault events)")
    axes[-1].set_xlabel("simulated time (s)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=3,
        fontsize="small",
        frameon=False,
        bbox_to_anchor=(0.5, 1 - 0.45 / fig.get_figheight()),
    )
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.75 / fig.get_figheight()))
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
        ax.set_title(f"{legend_label(result.architecture)}: the rollout takes {duration_s:.0f} s")
        ax.invert_yaxis()
    ax.set_xlim(start_s, end_s)
    ax.set_xlabel("simulated time (s)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for _, c in ROLLOUT_STATES.values()]
    legends = [name for name, _ in ROLLOUT_STATES.values()]
    fig.legend(handles, legends, ncol=4, loc="upper center", bbox_to_anchor=(0.5, 1.03))
    fig.tight_layout()
    return fig

"""Figures of runs under a load that changes: shedding policies through a spike, and an
autoscaler following the load.

Each function takes `RunResult`s and draws them; it runs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from labsim.model.metrics import RunResult
from labsim.study.plots.panels import legend_below
from labsim.study.plots.style import group_line, legend_label

#: How each scaling event is marked on the autoscaler's timelines: colour, line style.
SCALE_EVENTS: dict[str, tuple[str, Any]] = {
    "scale-out": ("black", ":"),
    "scale-in": ("grey", "--"),
}


def _per_replica(run: RunResult) -> pd.DataFrame:
    if run.replicas is None:
        raise ValueError(f"the {run.architecture} run has no per-replica samples (no autoscaler)")
    return run.replicas


def through_a_spike(
    runs: Mapping[str, RunResult],
    series: Sequence[tuple[str, str]],
    colours: Mapping[str, str],
    *,
    spike: tuple[float, float],
    window: tuple[float, float],
    title: str,
) -> Figure:
    """Runs that differ by one setting (a shedding policy, say), named by it: a panel per
    (timeline column, axis label), a line per run in its colour, the spike shaded."""
    fig, axes = plt.subplots(len(series), 1, figsize=(9, 2.6 * len(series) + 0.8), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, (column, label) in zip(axes, series, strict=True):
        for position, (name, run) in enumerate(runs.items()):
            frame = run.timeline
            ax.plot(
                frame["time_s"],
                frame[column],
                color=colours.get(name),
                label=name,
                **{k: v for k, v in group_line(position).items() if k != "marker"},
            )
        ax.axvspan(*spike, color="gold", alpha=0.2, label="the spike")
        ax.set_ylabel(label)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("simulated time (s)")
    axes[-1].set_xlim(*window)
    fig.suptitle(title)
    legend_below(fig, list(axes[:1]))
    return fig


def autoscaling(runs: Mapping[str, RunResult]) -> Figure:
    """An autoscaled run per architecture (a column each): the replicas billed, each
    replica's share of the CPU work (a line per replica), and the memory held; the
    scale-outs and scale-ins marked on every panel."""
    fig, axes = plt.subplots(
        3, len(runs), figsize=(5.5 * len(runs), 8.5), sharex=True, squeeze=False
    )
    replicas = max(int(_per_replica(run)["replica"].max()) + 1 for run in runs.values())
    palette = plt.get_cmap("tab10")
    for column, (architecture, run) in enumerate(runs.items()):
        billed, share, held = axes[:, column]
        billed.step(
            run.timeline["time_s"], run.timeline["replicas_billed"], where="post", color="black"
        )
        billed.set_title(legend_label(architecture))
        billed.yaxis.set_major_locator(MaxNLocator(integer=True))
        shares = _per_replica(run).pivot_table(
            index="time_s", columns="replica", values="cpu_share"
        )
        for replica in shares.columns:
            share.plot(
                shares.index,
                shares[replica],
                color=palette(int(replica) % 10),
                label=f"replica {replica}",
            )
        held.plot(run.timeline["time_s"], run.timeline["held_bytes"] / 1e6, color="tab:purple")
        held.set_ylim(bottom=0)
        held.set_xlabel("simulated time (s)")
        for ax in axes[:, column]:
            for kind, (colour, style) in SCALE_EVENTS.items():
                for t in run.events.query("kind == @kind")["time_s"]:
                    ax.axvline(t, color=colour, linestyle=style, linewidth=1, label=kind)
            ax.grid(True, alpha=0.3)
    for billed, share, held in axes.T:
        billed.set_ylabel("replicas billed")
        share.set_ylabel("share of the CPU work")
        held.set_ylabel("memory held (MB)")
    fig.suptitle("An autoscaler following the load (target: 50% CPU)")
    handles = [
        Line2D([], [], color=palette(k % 10), label=f"replica {k}") for k in range(replicas)
    ] + [
        Line2D([], [], color=colour, linestyle=style, label=kind)
        for kind, (colour, style) in SCALE_EVENTS.items()
    ]
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=min(len(handles), 6),
        fontsize="small",
        frameon=False,
    )
    rows = int(np.ceil(len(handles) / 6))
    fig.tight_layout(rect=(0, (0.3 * rows + 0.15) / fig.get_figheight(), 1, 1))
    return fig

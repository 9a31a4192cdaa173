"""Figures of live swarms: each architecture's swarm second by second, the latency its users
felt, and the measurement beside the simulation's prediction.

A swarm's summary (what `loadtest.scenarios.run.run_scenario` returns) carries a per-second
`timeline`, the `faults` the cluster went through and the `calls`; these functions draw them
an architecture per panel, in the colours of `labsim.study.plots`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from labsim.study.plots import COLOURS, LABELS, clipped_errors

#: How a replica's step in a rolling upgrade is drawn on a timeline.
EVENT_STYLES: dict[str, Literal[":", "--", "-"]] = {"drain": ":", "stop": "--", "ready": "-"}


def timelines(summaries: Mapping[str, Mapping[str, Any]], what: str) -> Figure:
    """Per architecture: calls completed in each second (bars), calls open (line), and each
    replica's drain, stop and return (vertical lines). `what` names the run in the titles."""
    rows = max(len(summaries), 1)
    fig, axes = plt.subplots(rows, 1, figsize=(9, 2.6 * rows), sharex=True, squeeze=False)
    events = [
        plt.Line2D([], [], color="grey", linestyle=style, label=f"a replica: {event}")
        for event, style in EVENT_STYLES.items()
    ]
    for ax, (arch, summary) in zip(axes[:, 0], summaries.items(), strict=False):
        timeline = pd.DataFrame(summary["timeline"])
        second = timeline["t"] + 0.5
        ax.bar(
            second,
            timeline["completed"],
            width=0.9,
            color=COLOURS.get(arch),
            alpha=0.6,
            label="completed in that second",
        )
        ax.plot(second, timeline["in_flight"], color="black", marker=".", label="calls open then")
        for fault in summary["faults"]:
            if fault["event"] in EVENT_STYLES:
                style = EVENT_STYLES[fault["event"]]
                ax.axvline(fault["t"], color="grey", linestyle=style, linewidth=1)
        ax.set_ylabel("calls")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # calls come whole
        ax.set_title(f"{LABELS.get(arch, arch)}: {what}")
        ax.grid(True, axis="y", alpha=0.3)
        handles = ax.get_legend_handles_labels()[0] + events
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    axes[-1, 0].set_xlabel("time since the swarm started (s)")
    fig.tight_layout()
    return fig


def latency_cdf(summaries: Mapping[str, Mapping[str, Any]], title: str) -> Figure:
    """Empirical CDF of the measured latency of completed calls, think time taken out."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for arch, summary in summaries.items():
        calls = pd.DataFrame(summary["calls"])
        latency_ms = np.sort(calls.loc[calls["outcome"] == "completed", "latency_ms"])
        share = np.arange(1, len(latency_ms) + 1) / max(len(latency_ms), 1)
        ax.step(
            latency_ms, share, where="post", color=COLOURS.get(arch), label=LABELS.get(arch, arch)
        )
    ax.set_xscale("log")
    ax.set_xlabel("latency per call, think time taken out (ms, log scale)")
    ax.set_ylabel("fraction of completed calls")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return fig


def against_simulation(
    predicted: pd.DataFrame,
    spread: pd.DataFrame,
    measured: pd.DataFrame,
    metrics: Sequence[str],
    title: str,
) -> Figure:
    """A panel per metric: the simulation's mean (grey, whiskers one standard deviation of
    its runs, stopped at zero) beside the measurement (the architecture's colour), an
    architecture per pair.

    The three frames have a row per architecture (by its label) and a column per metric.
    """
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.4 * len(metrics), 3.8), squeeze=False)
    names = list(predicted.index)
    by_label = {label: arch for arch, label in LABELS.items()}
    colours = [COLOURS.get(by_label.get(name, name)) for name in names]
    x = np.arange(len(names))
    for ax, metric in zip(axes[0], metrics, strict=True):
        ax.bar(
            x - 0.2,
            predicted[metric],
            0.4,
            yerr=clipped_errors(predicted[metric], spread.reindex(names)[metric].fillna(0.0)),
            capsize=3,
            color="lightgrey",
            edgecolor="black",
            label="simulated (mean, ±1 sd of runs)",
        )
        ax.bar(
            x + 0.2,
            measured.reindex(names)[metric].astype(float),
            0.4,
            color=colours,
            label="measured",
        )
        ax.set_xticks(x, names, rotation=15)
        ax.set_ylabel(metric)
        ax.set_title(metric[:1].upper() + metric[1:].split(" (")[0])
        ax.grid(True, axis="y", alpha=0.3)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=2)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig

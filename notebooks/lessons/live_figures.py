"""Figures of what the notebooks try live against real replicas: the bytes of each round,
the cost of sealing, which replicas open which states, a call moving between replicas,
and a task outliving the replica that ran it.

Each function takes the table the notebook has just shown and returns the figure, so the
notebook's cell stays a line or two and the numbers in the figure are those in the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator


def round_bytes(table: pd.DataFrame, title: str) -> Figure:
    """Each round's request and response (`traffic.rounds_table`), split into the part that
    is `requestState` and the rest."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    x = np.arange(len(table))
    parts = (
        ("request", "requestState sent (bytes)", -0.2, ("tab:blue", "lightsteelblue")),
        ("response", "requestState returned (bytes)", 0.2, ("tab:orange", "navajowhite")),
    )
    for message, state_column, offset, (colour, state_colour) in parts:
        total = table[f"{message} (bytes)"]
        state = table[state_column]
        ax.bar(x + offset, total - state, 0.4, color=colour, label=f"{message}, without state")
        ax.bar(
            x + offset,
            state,
            0.4,
            bottom=total - state,
            color=state_colour,
            hatch="//",
            label=f"requestState in the {message}",
        )
    names = [
        f"round {r}\n(replica {s})" for r, s in zip(table.index, table["served by"], strict=True)
    ]
    ax.set_xticks(x, names)
    ax.set_ylabel("message size (bytes, compact JSON)")
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def seal_cost(costs: pd.DataFrame) -> Figure:
    """CPU time to seal and to open a state, and its size, by the answers it carries."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    left.plot(costs.index, costs["seal (µs)"], marker="o", label="seal")
    left.plot(costs.index, costs["open and check (µs)"], marker="s", label="open and check")
    left.set_xlabel("answers carried in the state")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_ylabel("CPU time per state (µs)")
    left.set_title("Sealing is microseconds")
    left.set_ylim(bottom=0)
    left.legend()
    left.grid(True, alpha=0.3)
    right.plot(costs.index, costs["requestState (bytes)"] / 1024, marker="o")
    right.set_xlabel("answers carried in the state")
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    right.set_ylabel("requestState size on the wire (KiB)")
    right.set_title("and a few bytes per answer")
    right.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def outcome_matrix(
    outcomes: pd.DataFrame, colours: Mapping[str, str], names: Sequence[str], title: str
) -> Figure:
    """A square per (row, column) of `outcomes`, coloured and named by its outcome; the
    legend lists the outcomes in `colours`' order. `names` label the rows and columns."""
    kinds = list(colours)
    codes = outcomes.map(lambda outcome: kinds.index(_kind(outcome, kinds))).to_numpy()
    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    palette = [colours[kind] for kind in kinds]
    ax.imshow(codes, cmap=ListedColormap(palette), vmin=0, vmax=len(kinds) - 1)
    ax.set_xticks(range(outcomes.shape[1]), names, fontsize="small")
    ax.set_yticks(range(outcomes.shape[0]), names, fontsize="small")
    ax.set_xlabel(outcomes.columns.name)
    ax.set_ylabel(outcomes.index.name)
    ax.set_title(title)
    for (row, column), outcome in np.ndenumerate(outcomes.to_numpy()):
        ax.text(column, row, outcome.replace(": ", ":\n"), ha="center", va="center", fontsize=8)
    ax.legend(
        [Rectangle((0, 0), 1, 1, color=colours[kind]) for kind in kinds],
        kinds,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
    )
    fig.tight_layout()
    return fig


def _kind(outcome: str, kinds: Sequence[str]) -> str:
    """The kind an outcome belongs to: the kind it starts with ("rejected: tampered")."""
    return next(kind for kind in kinds if outcome.startswith(kind))


def takeover(polls: pd.DataFrame, stopped_s: float, title: str) -> Figure:
    """A task's polls over time: the step it reported and which replica answered, with the
    moment its first replica stopped and the moment another took it over."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    for replica, colour in (("A", "tab:blue"), ("B", "tab:green")):
        mine = polls[(polls["polled"] == replica) & polls["step"].notna()]
        ax.plot(
            mine["time_s"],
            mine["step"],
            "o",
            ms=3,
            color=colour,
            label=f"poll answered by {replica}",
        )
    ax.axvline(stopped_s, color="black", linestyle=":", label="A stops")
    resumed = polls[polls["message"].str.startswith("Resumed")]
    if len(resumed):
        ax.axvline(
            resumed["time_s"].iloc[0], color="tab:green", linestyle="--", label="B takes over"
        )
    ax.set_xlabel("time since the task was created (s)")
    ax.set_ylabel("step reported (of 4)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def crunch_slices(rounds: pd.DataFrame, alone_ms: float, title: str) -> Figure:
    """A call's rounds as slices of one bar, coloured by the replica that served each,
    above the same work done in one go."""
    fig, ax = plt.subplots(figsize=(8, 3))
    colours = {"A": "tab:purple", "B": "tab:olive"}
    left = 0.0
    for number, row in rounds.iterrows():
        width = row["CPU on the replica (ms)"]
        ax.barh(0, width, left=left, color=colours[row["served by"]], edgecolor="white")
        ax.text(left + width / 2, 0, f"round {number}", ha="center", va="center", color="white")
        left += width
    ax.barh(-1, alone_ms, color="tab:grey")
    ax.set_yticks([0, -1], ["moving A <-> B", "one go, in this process"])
    ax.set_xlabel("CPU time (ms)")
    ax.set_title(title)
    ax.legend(
        [Rectangle((0, 0), 1, 1, color=c) for c in (*colours.values(), "tab:grey")],
        ["replica A", "replica B", "computed here"],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize="small",
    )
    fig.tight_layout()
    return fig

"""A plan drawn: each constraint's use of its limit, at the answer and one replica fewer.

Over the panels, the workload planned: its rate and its tools by their own names. One
panel per architecture, a pair of bars per constraint (CPU, memory, connections,
latency, completion): the fleet the plan answers, and the one just smaller. The limit is
the line at 1: the answer's bars stay under it, one fewer's break through where it
fails. A use past the panel's top (a call that never completed makes latency's
infinite) is drawn at the top, marked with an arrow.
"""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from labsim.study.constraints import CONSTRAINTS, SHORT_NAMES
from labsim.study.plan import Plan
from labsim.study.plots.style import COLOURS, legend_label

_TOP = 2.0  # uses above twice the limit are drawn at the panel's top


def plan_uses(plan: Plan) -> Figure:
    """Each architecture's use of every limit at its answer N and at N-1."""
    answers = plan.architectures
    fig, axes = plt.subplots(1, len(answers), figsize=(4.2 * len(answers), 3.6), sharey=True)
    axes = np.atleast_1d(axes)
    x = np.arange(len(CONSTRAINTS))
    for ax, (name, answer) in zip(axes, answers.items(), strict=True):
        colour = COLOURS.get(name, "tab:grey")
        title = f"{legend_label(name)}: "
        if answer.fleet is None:
            ax.text(0.5, 0.5, "no fleet meets\n(see the plan's notes)", ha="center",
                    va="center", transform=ax.transAxes)  # fmt: skip
            ax.set_title(title + "no answer")
            continue
        pairs = [(f"N = {answer.fleet.replicas}", answer.fleet.use, colour, -0.2)]
        fewer = answer.one_fewer
        if fewer is not None:
            pairs.append((f"N - 1 = {fewer.replicas}", fewer.use, "lightgrey", 0.2))
        else:
            ax.text(0.98, 0.95, "no N - 1: nothing smaller", ha="right", va="top",
                    transform=ax.transAxes, fontsize="small")  # fmt: skip
        for label, use, fill, offset in pairs:
            heights = [_drawn(use.get(c)) for c in CONSTRAINTS]
            bars = ax.bar(x + offset, heights, 0.38, label=label, color=fill, edgecolor=colour)
            for bar, c in zip(bars, CONSTRAINTS, strict=True):
                value = use.get(c)
                if value is None or value > _TOP:
                    ax.annotate("^", (bar.get_x() + bar.get_width() / 2, _TOP), ha="center")
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--")
        ax.set_xticks(x, [SHORT_NAMES[c] for c in CONSTRAINTS])
        ax.set_ylim(0, _TOP * 1.08)
        ax.set_title(title + f"binding {answer.binding}")
        ax.legend(fontsize="small", loc="upper left")
    axes[0].set_ylabel("use of the limit (1 = the limit)")
    fig.suptitle(_workload(plan), fontsize="medium")
    fig.tight_layout()
    return fig


def _drawn(use: float | None) -> float:
    """A use as drawn: capped at the panel's top (None is an infinite use, a miss)."""
    return _TOP if use is None else min(use, _TOP)


def _workload(plan: Plan) -> str:
    """The workload planned, its tools by their own names: `50 calls/s: book_room 60%, ...`."""
    request = plan.request
    mix = ", ".join(
        f"{name} {share:.0%}" for name, share in zip(request.tools, request.tool_mix, strict=True)
    )
    return f"{request.rate_per_s:g} calls/s: {mix}"

"""A run's headline figures, named as CI gates name them, and their change since a run before.

A figure is a number of the run's summary under a short name: `p95_ms`, `error_share`,
`throughput_per_s` ... for the whole run, and `TOOL.p95_ms` for one tool's calls.
`--fail-if` judges them (`loadtest.scenarios.thresholds`), `--compare` prints each one's
change against an earlier run's JSON.
"""

from __future__ import annotations

from typing import Any

from loadtest.swarm.tool_table import error_share

#: A run's figures, each with what it is.
RUN_FIGURES = {
    "p50_ms": "median latency of a completed call (ms)",
    "p95_ms": "95th percentile latency of a completed call (ms)",
    "p99_ms": "99th percentile latency of a completed call (ms)",
    "error_share": "share of the calls whose user answered that failed or were lost",
    "throughput_per_s": "calls completed per second",
    "started": "calls started",
    "completed": "calls completed",
    "failed": "calls failed",
    "lost": "calls lost",
    "retries": "requests sent again",
}
#: One tool's figures (`TOOL.NAME`).
TOOL_FIGURES = {
    "p50_ms": "median latency of the tool's completed calls (ms)",
    "p95_ms": "95th percentile latency of the tool's completed calls (ms)",
    "p99_ms": "99th percentile latency of the tool's completed calls (ms)",
    "error_share": "share of the tool's answered calls that failed or were lost",
    "calls": "the tool's calls",
    "completed": "the tool's calls completed",
    "failed": "the tool's calls failed",
    "lost": "the tool's calls lost",
}


class UnknownFigure(ValueError):
    """A figure no run has: its name, and the names there are."""


def run_figures(summary: dict[str, Any]) -> dict[str, float | None]:
    """The run's figures from its summary (a latency is None when no call completed)."""
    latency = summary.get("latency_ms", {})
    answered = summary.get("started", 0) - summary.get("abandoned", 0)
    return {
        "p50_ms": latency.get("p50"),
        "p95_ms": latency.get("p95"),
        "p99_ms": latency.get("p99"),
        "error_share": error_share(summary.get("failed", 0), summary.get("lost", 0), answered),
        "throughput_per_s": summary.get("throughput_per_s"),
        "started": summary.get("started"),
        "completed": summary.get("completed"),
        "failed": summary.get("failed"),
        "lost": summary.get("lost"),
        "retries": summary.get("retries"),
    }


def tool_figures(tool: dict[str, Any]) -> dict[str, float | None]:
    """One tool's figures from its row of the summary's `per_tool`."""
    answered = tool.get("calls", 0) - tool.get("abandoned", 0)
    return {
        "p50_ms": tool.get("p50_ms"),
        "p95_ms": tool.get("p95_ms"),
        "p99_ms": tool.get("p99_ms"),
        "error_share": error_share(tool.get("failed", 0), tool.get("lost", 0), answered),
        "calls": tool.get("calls"),
        "completed": tool.get("completed"),
        "failed": tool.get("failed"),
        "lost": tool.get("lost"),
    }


def figures(summary: dict[str, Any]) -> dict[str, float | None]:
    """Every figure of a run: its own, then each tool's as `TOOL.NAME`."""
    found = run_figures(summary)
    for tool, row in sorted(summary.get("per_tool", {}).items()):
        found.update({f"{tool}.{name}": v for name, v in tool_figures(row).items()})
    return found


def check_figure(name: str, tools: list[str]) -> None:
    """Refuse a figure no run of these tools has, naming the ones there are."""
    tool, dot, figure = name.rpartition(".")
    if not dot and figure in RUN_FIGURES:
        return
    if dot and tool in tools and figure in TOOL_FIGURES:
        return
    if dot and tool not in tools:
        raise UnknownFigure(
            f"{name}: no tool {tool!r} in the run's mix (its tools: {', '.join(tools) or 'none'})"
        )
    known = TOOL_FIGURES if dot else RUN_FIGURES
    raise UnknownFigure(
        f"{name}: no such figure{' of a tool' if dot else ''} (one of: {', '.join(known)}"
        f"{'' if dot else '; a tool`s as TOOL.' + '|'.join(TOOL_FIGURES)})"
    )


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Each figure of either run: its value before, now, the change and the change in
    percent (None where a side has no value or the earlier one is 0)."""
    before, now = figures(old), figures(new)
    rows = []
    for name in [*before, *(n for n in now if n not in before)]:
        was, is_ = before.get(name), now.get(name)
        delta = None if was is None or is_ is None else round(is_ - was, 6)
        percent = None if delta is None or not was else round(100 * delta / was, 1)
        rows.append(
            {"figure": name, "before": was, "now": is_, "change": delta, "percent": percent}
        )
    return rows


def change_lines(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """`changes` as lines to print: figure, before -> now, the change and its percent."""
    rows = changes(old, new)
    width = max((len(r["figure"]) for r in rows), default=6)
    lines = []
    for r in rows:
        change = "-" if r["change"] is None else f"{r['change']:+g}"
        percent = "" if r["percent"] is None else f" ({r['percent']:+.1f}%)"
        lines.append(
            f"{r['figure']:<{width}} {_value(r['before']):>10} -> {_value(r['now']):<10} "
            f"{change}{percent}"
        )
    return lines


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"

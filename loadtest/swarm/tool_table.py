"""Each tool's calls in a swarm: how many, how they ended, rounds, latency, and why the
ones that did not complete failed, in the server's words.

The run's summary keeps it as `per_tool` (its `completed` adds up to the run's), the
headless table prints it for a swarm on a target, and the Lab tools tab shows it live.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

#: The distinct reasons a tool's failures are kept under (most frequent first).
TOOL_FAILURE_REASONS = 10


def percentiles_ms(values: list[float]) -> dict[str, float | None]:
    """The median, 95th and 99th percentiles of latencies in ms (None without any)."""
    if not values:
        return {"p50": None, "p95": None, "p99": None}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": round(float(p50), 2), "p95": round(float(p95), 2), "p99": round(float(p99), 2)}


def error_share(failed: int, lost: int, answered: int) -> float:
    """Failed and lost calls as a share of the calls whose user answered (0 without any)."""
    return round((failed + lost) / answered, 6) if answered else 0.0


def per_tool(calls: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each tool's calls: how many, how they ended (`completed` adds up to the run's), the
    rounds of a completed call, its latency percentiles, and why the others did not
    complete, in the server's words (`failures`: the error of each, most frequent first)."""
    tools: dict[str, dict[str, Any]] = {}
    for name in sorted({c["tool"] for c in calls}):
        mine = [c for c in calls if c["tool"] == name]
        outcomes = Counter(c["outcome"] for c in mine)
        done = [c for c in mine if c["outcome"] == "completed"]
        latency = percentiles_ms([c["latency_ms"] for c in done])
        reasons = Counter(
            c.get("error") or c["outcome"] for c in mine if c["outcome"] in ("failed", "lost")
        )
        tools[name] = {
            "calls": len(mine),
            "completed": len(done),
            "failed": outcomes.get("failed", 0),
            "lost": outcomes.get("lost", 0),
            "abandoned": outcomes.get("abandoned", 0),
            "rounds_mean": (
                round(sum(c.get("rounds", 0) for c in done) / len(done), 3) if done else None
            ),
            "p50_ms": latency["p50"],
            "p95_ms": latency["p95"],
            "p99_ms": latency["p99"],
            "failures": dict(reasons.most_common(TOOL_FAILURE_REASONS)),
        }
    return tools


def tool_rows(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`per_tool` as table rows, one a tool, its failures in one cell ("N x reason; ...")."""
    return [
        {
            "tool": name,
            **{k: v for k, v in figures.items() if k != "failures"},
            "failures": "; ".join(f"{n} x {why}" for why, n in figures["failures"].items()),
        }
        for name, figures in per_tool(calls).items()
    ]

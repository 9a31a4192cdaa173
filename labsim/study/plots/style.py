"""What every figure shares: each architecture's colour, name and line style."""

from __future__ import annotations

from typing import Any

COLOURS = {"sse-store": "tab:orange", "sticky": "tab:red", "mrtr": "tab:blue"}
LABELS = {"sse-store": "SSE + shared store", "sticky": "sticky load balancer", "mrtr": "MRTR"}
# Architectures' series often coincide (the two legacy ones hold the same calls; sticky and
# MRTR both at zero where neither pays a store): the store's line is drawn wide, MRTR's
# narrow over it, and the sticky one dashed on top of both, so every one stays visible.
LINES: dict[str, dict[str, Any]] = {
    "sse-store": {"linewidth": 3.0, "alpha": 0.8},
    "sticky": {"linewidth": 1.4, "linestyle": (0, (4, 2)), "zorder": 2.5},
    "mrtr": {"linewidth": 1.4},
}
# Markers for series with a point per value (sweeps): a shape each, largest underneath.
MARKERS: dict[str, dict[str, Any]] = {
    "sse-store": {"marker": "o", "markersize": 8},
    "sticky": {"marker": "s", "markersize": 4},
    "mrtr": {"marker": "^", "markersize": 6},
}
#: For groups other than architectures (shedding policies, say), in the order they are
#: drawn: each later line narrower and dashed otherwise, with a smaller marker of its own.
GROUP_LINES: tuple[dict[str, Any], ...] = (
    {"linewidth": 3.0, "marker": "o", "markersize": 8, "alpha": 0.8},
    {"linewidth": 1.8, "marker": "s", "markersize": 5, "linestyle": (0, (5, 2))},
    {"linewidth": 1.2, "marker": "^", "markersize": 4, "linestyle": (0, (1, 1.5))},
    {"linewidth": 1.0, "marker": "D", "markersize": 3, "linestyle": (0, (3, 1, 1, 1))},
)


def group_line(position: int) -> dict[str, Any]:
    """The line style of the group drawn `position`-th (0 first) among non-architectures."""
    return GROUP_LINES[min(position, len(GROUP_LINES) - 1)]


def legend_label(architecture: str) -> str:
    """The architecture's name in a legend."""
    return LABELS.get(architecture, architecture)

"""What every figure shares: each architecture's colour, name and line style."""

from __future__ import annotations

from typing import Any

COLOURS = {"sse-store": "tab:orange", "sticky": "tab:red", "mrtr": "tab:blue"}
LABELS = {"sse-store": "SSE + shared store", "sticky": "sticky load balancer", "mrtr": "MRTR"}
# The two legacy architectures hold the same calls, so their time series often coincide:
# the store's line is drawn wide and the sticky one dashed on top, so both stay visible.
LINES: dict[str, dict[str, Any]] = {
    "sse-store": {"linewidth": 3.0, "alpha": 0.8},
    "sticky": {"linewidth": 1.4, "linestyle": (0, (4, 2))},
    "mrtr": {"linewidth": 1.4},
}


def legend_label(architecture: str) -> str:
    """The architecture's name in a legend."""
    return LABELS.get(architecture, architecture)

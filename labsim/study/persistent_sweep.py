"""Where MRTR's advantage goes as more of the calls are to persistent tools.

MRTR keeps nothing between rounds, so a deployment of it needs no store, holds no memory
while users think and loses nothing in a crash. A persistent tool keeps its task in a
store under every architecture. `share_sweep` runs the `persistent` scenario from no
persistent calls to all of them; `advantage` turns it into what MRTR saves against each
legacy architecture at every share: the bill, and the memory held while users think.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from labsim.model.simulation import ARCHITECTURES
from labsim.study.experiments import sweep

SHARES = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)  # from none to every call a task
PARAMETER = "persistent_share"
# (metric, label) of what MRTR saves; a positive saving is MRTR's advantage.
SAVINGS = (
    ("cost_per_million_calls_usd", "cost saved per million calls (USD)"),
    ("mean_held_bytes", "memory held saved (MB)"),
)


def share_sweep(
    shares: Sequence[float] = SHARES,
    replications: int = 3,
    *,
    scenario: str = "persistent",
    seed: int = 0,
    architectures: Sequence[str] = tuple(ARCHITECTURES),
    processes: int | None = None,
    progress: bool = False,
    **overrides: Any,
) -> pd.DataFrame:
    """`scenario` at each persistent share (tidy rows, as `labsim.study.sweep`)."""
    return sweep(
        scenario,
        PARAMETER,
        list(shares),
        replications,
        seed=seed,
        architectures=architectures,
        processes=processes,
        progress=progress,
        **overrides,
    )


def advantage(frame: pd.DataFrame, metric: str = "cost_per_million_calls_usd") -> pd.DataFrame:
    """What MRTR saves on `metric` against each other architecture, by persistent share.

    One row per share, one column per other architecture: its mean minus MRTR's, so a
    positive value is MRTR's advantage. `frame` is what `share_sweep` returned.
    """
    rows = frame[frame["metric"] == metric]
    means = rows.pivot_table(index=PARAMETER, columns="architecture", values="mean")
    if "mrtr" not in means.columns:
        raise ValueError("the sweep has no mrtr runs to compare with")
    others = [a for a in means.columns if a != "mrtr"]
    saved = means[others].sub(means["mrtr"], axis=0)
    saved.columns.name = f"{metric} saved by mrtr against"
    return saved

"""Readable tables from labsim's tidy results: a row per architecture, a column per metric.

`labsim.study.compare` and `labsim.study.sweep` return tidy rows (architecture, metric, mean,
ci_half_width). A reader wants "p95 latency (ms)" next to "SSE + shared store", so
`readable` pivots them, scales each metric to the unit its column names, and names rows
the way the figures' legends do. `column` shows a few named quantities as a titled table
instead of a bare `pd.Series` printout. Counts stay whole numbers in both, and a
confidence interval never reaches where its quantity cannot go: a count below zero, a
share above all.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from labsim.model.metrics import bounds, clipped_interval
from labsim.study.plots import LABELS

#: metric -> (column name with unit, divisor from the summary's unit).
METRICS: dict[str, tuple[str, float]] = {
    "calls": ("calls measured", 1.0),
    "completed_fraction": ("completed (%)", 0.01),
    "completed": ("completed", 1.0),
    "failed": ("failed", 1.0),
    "lost": ("lost", 1.0),
    "abandoned": ("abandoned by the user", 1.0),
    "state_losses": ("calls whose progress was lost", 1.0),
    "re_prompts": ("answers asked again", 1.0),
    "new_questions": ("new questions after an upgrade", 1.0),
    "restarts": ("calls restarted", 1.0),
    "offloads": ("offloads", 1.0),
    "goodput_per_s": ("goodput (calls/s)", 1.0),
    "p50_latency_s": ("p50 latency (ms)", 1e-3),
    "p95_latency_s": ("p95 latency (ms)", 1e-3),
    "p99_latency_s": ("p99 latency (ms)", 1e-3),
    "mean_latency_s": ("mean latency (ms)", 1e-3),
    "mean_open_streams": ("mean open SSE streams", 1.0),
    "peak_open_streams": ("peak open SSE streams", 1.0),
    "mean_held_bytes": ("mean memory held (MB)", 1e6),
    "peak_held_bytes": ("peak memory held (MB)", 1e6),
    "utilization": ("CPU utilization (%)", 0.01),
    "load_imbalance": ("busiest replica / mean", 1.0),
    "cpu_s": ("CPU (s)", 1.0),
    "wasted_cpu_s": ("wasted CPU (s)", 1.0),
    "store_ops": ("store operations", 1.0),
    "upgrade_duration_s": ("upgrade duration (s)", 1.0),
    "cost_per_million_calls_usd": ("cost per million calls (USD)", 1.0),
    "store_share_of_bill": ("store share of the bill (%)", 0.01),
    "tasks_started": ("tasks started", 1.0),
    "tasks_completed": ("tasks completed", 1.0),
    "tasks_rejected": ("tasks refused", 1.0),
    "tasks_lost": ("tasks lost", 1.0),
    "tasks_expired": ("tasks expired", 1.0),
    "tasks_abandoned": ("tasks abandoned by the user", 1.0),
    "tasks_taken_over": ("takeovers", 1.0),
    "task_store_errors": ("store errors seen", 1.0),
    "task_store_ops": ("task store operations", 1.0),
    "task_wasted_work_s": ("work done twice (s)", 1.0),
}


def mean_and_interval(mean: float, half_width: float, low: float, high: float) -> str:
    """ "mean ± half-width", or "mean (from to to)" where the interval, clipped to [low,
    high], is no longer symmetric: a count of 0.5 ± 6.4 reads "0.5 (0 to 6.9)"."""
    if pd.isna(half_width):
        return significant(mean, 3)
    lower, upper = clipped_interval(mean, half_width, low, high)
    if (lower, upper) == (mean - half_width, mean + half_width):
        return f"{significant(mean, 3)} ± {significant(half_width, 2)}"
    return f"{significant(mean, 3)} ({significant(lower, 2)} to {significant(upper, 2)})"


#: Headings for what rows are grouped by (swept parameters, run settings).
HEADINGS: dict[str, str] = {
    "architecture": "architecture",
    "scenario": "scenario",
    "replicas": "replicas",
    "policy": "shedding policy",
    "arrival_rate_per_s": "arrival rate (calls/s)",
    "think_time_median_s": "think time, median (s)",
    "checkpoint_fraction": "checkpoint at (share of the work)",
    "persistent_share": "calls to persistent tools (share)",
}


def heading(name: str) -> str:
    """A readable heading, with its unit, for a metric or parameter name."""
    if name in HEADINGS:
        return HEADINGS[name]
    if name in METRICS:
        return METRICS[name][0]
    return name.replace("_", " ")


def significant(value: float, digits: int) -> str:
    """`value` to `digits` significant digits, without an exponent or trailing zeros:
    8,630 not 8.63e+03, 3 not 3.00."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{round(value, decimals):,.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def whole_numbers(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with every float column that holds only whole numbers shown as integers."""
    table = table.copy()
    for name in table.columns:
        values = table[name]
        if pd.api.types.is_float_dtype(values):
            present = values.dropna()
            if len(present) and np.all(np.isfinite(present)) and (present % 1 == 0).all():
                table[name] = values.astype("Int64")
    return table


def column(values: Mapping[str, object], title: str, digits: int = 2) -> pd.DataFrame:
    """Named quantities as a one-column table titled `title`: whole numbers stay whole,
    other numbers are rounded to `digits` decimals, anything else is shown as it is."""
    return columns({title: values}, digits)


def columns(by_title: Mapping[str, Mapping[str, object]], digits: int = 2) -> pd.DataFrame:
    """Named quantities side by side, a titled column each, shown as `column` shows them."""

    def shown(value: object) -> object:
        if isinstance(value, bool | np.bool_):
            return "yes" if value else "no"
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            number = float(value)
            return int(number) if number.is_integer() else round(number, digits)
        return value

    # Object dtype, so that whole numbers beside fractions are not shown as floats.
    return pd.DataFrame(
        {
            title: pd.Series({name: shown(v) for name, v in values.items()}, dtype=object)
            for title, values in by_title.items()
        }
    )


def pivot(
    frame: pd.DataFrame, index: str, columns: str, values: Sequence[str], digits: int = 2
) -> pd.DataFrame:
    """A row per `index` value and a column per (metric, `columns` value), in the units and
    with the headings `readable` uses."""
    scaled = frame.copy()
    for metric in values:
        scaled[metric] = scaled[metric] / METRICS.get(metric, (metric, 1.0))[1]
    table = scaled.pivot(index=index, columns=columns, values=list(values)).round(digits)
    table = table.rename(columns=heading, level=0)
    table.columns.names = [None, heading(columns)]
    table.index.name = heading(index)
    return whole_numbers(table)


def wide(tidy: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Tidy rows (as `labsim.study.compare` and `sweep` return them) as one row of means per
    group of `by` and a column per metric: the shape `pivot` reads."""
    means = tidy.pivot_table(index=list(by), columns="metric", values="mean")
    return means.reset_index().rename_axis(columns=None)


def events(frame: pd.DataFrame) -> pd.DataFrame:
    """A run's fault events (labsim's `RunResult.events`) with readable headings; events of
    the whole cluster (replica -1) name no replica."""
    shown = frame.rename(
        columns={"time_s": "time (s)", "kind": "event", "replica": "replica", "detail": "detail"}
    ).astype({"replica": object})
    shown.loc[frame["replica"] < 0, "replica"] = "all"
    return shown.reset_index(drop=True).rename_axis(None)


def label(architecture: str) -> str:
    """The name figures and tables use for an architecture."""
    return LABELS.get(architecture, architecture)


def readable(
    tidy: pd.DataFrame,
    metrics: Sequence[str],
    *,
    by: str | None = None,
    with_ci: bool = False,
    digits: int = 2,
) -> pd.DataFrame:
    """Means of `metrics` per architecture (and per `by`, e.g. a swept parameter).

    With `with_ci`, each cell is "mean ± half-width" of the 95% confidence interval,
    clipped to the values the metric can take (`mean_and_interval`); otherwise means are
    rounded to `digits` decimals.
    """
    rows = tidy[tidy["metric"].isin(metrics)].copy()
    divisors = rows["metric"].map(lambda m: METRICS.get(m, (m, 1.0))[1])
    means = rows["mean"] / divisors
    if with_ci:
        half = rows["ci_half_width"] / divisors
        rows["value"] = [
            mean_and_interval(v, h, *(b / d for b in bounds(m)))
            for v, h, m, d in zip(means, half, rows["metric"], divisors, strict=True)
        ]
    else:
        rows["value"] = means.round(digits)
    rows["architecture"] = rows["architecture"].map(label)
    index = [by, "architecture"] if by else ["architecture"]
    table = rows.pivot_table(index=index, columns="metric", values="value", aggfunc="first")
    table = table[[m for m in metrics if m in table.columns]]
    table.columns = [heading(m) for m in table.columns]
    table.columns.name = None
    table.index.names = [heading(name) for name in index]
    # Architectures in the order the figures' legends give them, not alphabetical.
    order = {label(a): k for k, a in enumerate(LABELS)}
    table = table.sort_index(
        level=list(range(table.index.nlevels)),
        key=lambda level: (
            level.map(lambda n: order.get(n, len(order)))
            if level.name == heading("architecture")
            else level
        ),
    )
    return whole_numbers(table)

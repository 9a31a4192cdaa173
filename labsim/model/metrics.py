"""What a run measured: a row per call, time averages, a time series, fault events.

During a run the simulation only appends tuples and moves gauges (no pandas in
the hot loop); `RunResult` turns them into DataFrames at the end and
`summarize` reduces them to the per-run numbers the comparisons use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from labsim.model.params import SimParams

COMPLETED, FAILED, LOST, ABANDONED = "completed", "failed", "lost", "abandoned"
#: Summary metrics that are shares of a whole, at most 1; every summary metric is at least 0.
SHARES = frozenset(
    {
        "completed_fraction",
        "completed_share",
        "failed_fraction",
        "waited_fraction",
        "utilization",
        "store_share_of_bill",
    }
)
OUTCOMES = (COMPLETED, FAILED, LOST, ABANDONED)

# One row per call, in this order (see `Call.record` in labsim.model.call).
CALL_COLUMNS = (
    "call",
    "tool",
    "arrival_s",
    "end_s",
    "outcome",
    "think_s",
    "queue_wait_s",
    "cpu_s",
    "wasted_cpu_s",
    "rounds",
    "answers",
    "re_prompts",
    "new_questions",
    "restarts",
    "retries",
    "offloads",
    "expired_states",
    "store_ops",
    "bytes_in",
    "bytes_out",
    "first_replica",
)
TIMELINE_COLUMNS = (
    "time_s",
    "in_flight_calls",
    "held_bytes",
    "open_streams",
    "replicas_up",
    "replicas_billed",
    "busy_workers",
    "queued_requests",
)
EVENT_COLUMNS = ("time_s", "kind", "replica", "detail")
# One row per replica per autoscaler period (see `labsim.model.autoscale`).
REPLICA_COLUMNS = (
    "time_s",
    "replica",
    "state",
    "cpu_share",
    "utilization",
    "held_calls",
    "held_bytes",
    "connections",
)


class Gauge:
    """A level that moves at instants (calls in flight, calls held): its peak and time average.

    Only the measurement window [t0, t1] counts, so a run's fill-up and drain
    do not bias the average; a level that lasts no time at all (a call held
    for zero seconds) does not count as a peak.
    """

    __slots__ = ("_area", "_last_s", "_peak", "t0", "t1", "value")

    def __init__(self, t0: float, t1: float) -> None:
        self.t0, self.t1 = t0, t1
        self.value = 0
        self._peak = 0
        self._last_s = 0.0
        self._area = 0.0

    def move(self, now: float, delta: int) -> None:
        """Change the level by `delta` at time `now`."""
        last = self._last_s
        if now != last:
            lo = last if last > self.t0 else self.t0
            hi = now if now < self.t1 else self.t1
            if hi > lo:
                self._area += self.value * (hi - lo)
                if self.value > self._peak:
                    self._peak = self.value
            self._last_s = now
        self.value += delta

    def _close(self) -> None:
        self.move(max(self._last_s, self.t1), 0)

    @property
    def peak(self) -> int:
        """Highest level held for some time inside the window (read once the run is over)."""
        self._close()
        return self._peak

    def mean(self) -> float:
        """Time-average level over the window (read once the run is over)."""
        self._close()
        return self._area / (self.t1 - self.t0)


@dataclass
class Recorder:
    """The simulation's notebook: finished calls, time-series samples, fault events."""

    calls: list[tuple] = field(default_factory=list)
    samples: list[tuple] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)
    replica_samples: list[tuple] = field(default_factory=list)

    def event(self, time_s: float, kind: str, replica: int | None = None, detail: str = "") -> None:
        """Note a fault event (crash, drain, store outage, ...) for the timeline."""
        self.events.append((time_s, kind, -1 if replica is None else replica, detail))


@dataclass
class RunResult:
    """One simulated run: a row per call, a time series, fault events and per-run totals.

    `calls` has one row per call (`measured` marks those arriving after the
    warm-up and before the horizon); `timeline` samples the cluster every few
    simulated seconds; `events` lists the faults as they happened; `summary`
    holds the per-run metrics (see `summarize`); `tasks` has one row per call to
    a persistent tool (`labsim.model.task_store.TASK_COLUMNS`).
    """

    architecture: str
    seed: int
    params: SimParams
    calls: pd.DataFrame
    timeline: pd.DataFrame
    events: pd.DataFrame
    summary: dict[str, Any]
    tasks: pd.DataFrame = field(default_factory=pd.DataFrame)
    replicas: pd.DataFrame | None = None  # per-replica samples, when an autoscaler ran

    def measured_calls(self) -> pd.DataFrame:
        """The calls that arrived inside the measurement window."""
        return self.calls[self.calls["measured"]]


# The call rows' types: times in seconds are floats (their names end in `_s`), the
# outcome a short name, every other column a count or an index.
_CALL_DTYPE = np.dtype(
    [
        (name, "U9" if name == "outcome" else "f8" if name.endswith("_s") else "i8")
        for name in CALL_COLUMNS
    ]
)


def calls_frame(rows: list[tuple], warmup_s: float, horizon_s: float) -> pd.DataFrame:
    """Per-call records as a DataFrame, with server latency and the `measured` flag."""
    # One typed NumPy conversion of all the rows: pandas infers each column's type from
    # Python objects otherwise, which costs more than most of a short run.
    table = np.array(rows, dtype=_CALL_DTYPE)
    table = table[np.argsort(table["call"], kind="stable")]
    frame = pd.DataFrame({name: table[name] for name in CALL_COLUMNS})
    frame["outcome"] = pd.Categorical(table["outcome"], categories=list(OUTCOMES))
    frame["time_in_system_s"] = frame["end_s"] - frame["arrival_s"]
    # Server latency is what the user waits for the server: everything but their own thinking.
    frame["server_latency_s"] = frame["time_in_system_s"] - frame["think_s"]
    frame["measured"] = (frame["arrival_s"] >= warmup_s) & (frame["arrival_s"] < horizon_s)
    return frame


@dataclass(frozen=True)
class LittlesLaw:
    """Little's law on one run: L (time-average calls in flight) against lambda * W."""

    mean_in_flight: float
    arrival_rate_per_s: float
    mean_time_in_system_s: float

    @property
    def predicted_in_flight(self) -> float:
        """lambda * W."""
        return self.arrival_rate_per_s * self.mean_time_in_system_s

    @property
    def ratio(self) -> float:
        """L / (lambda W): 1 when the law holds."""
        predicted = self.predicted_in_flight
        return self.mean_in_flight / predicted if predicted else float("nan")

    @property
    def relative_error(self) -> float:
        """|L - lambda W| / lambda W."""
        predicted = self.predicted_in_flight
        if predicted == 0:
            return 0.0 if self.mean_in_flight == 0 else float("inf")
        return abs(self.mean_in_flight - predicted) / predicted


def littles_law(result: RunResult) -> LittlesLaw:
    """L measured by the simulation's own in-flight gauge, lambda and W from the call rows."""
    window_s = result.params.horizon_s - result.params.warmup_s
    measured = result.measured_calls()
    return LittlesLaw(
        mean_in_flight=result.summary["mean_in_flight_calls"],
        arrival_rate_per_s=len(measured) / window_s,
        mean_time_in_system_s=float(measured["time_in_system_s"].mean()) if len(measured) else 0.0,
    )


def bounds(metric: str) -> tuple[float, float]:
    """The values a summary metric can take: (lowest, highest)."""
    return 0.0, 1.0 if metric in SHARES else math.inf


def clipped_interval(
    mean: float, half_width: float, low: float = 0.0, high: float = math.inf
) -> tuple[float, float]:
    """The interval `mean` ± `half_width` kept within [low, high]: a count's interval never
    reaches below zero, a share's never above one."""
    return max(mean - half_width, low), min(mean + half_width, high)


def quantile_counting_misses(latency_s: np.ndarray, p: float) -> float:
    """The `p` quantile of latencies where a call that never completed counts as infinite
    (a miss): linear between neighbours, infinite once a neighbour is a miss."""
    if not len(latency_s):
        return float("nan")
    ordered = np.sort(latency_s)
    position = p * (len(ordered) - 1)
    below, above = int(np.floor(position)), int(np.ceil(position))
    if not np.isfinite(ordered[above]):
        return math.inf
    return float(ordered[below] + (ordered[above] - ordered[below]) * (position - below))


def summarize(
    calls: pd.DataFrame, params: SimParams, extra: dict[str, Any]
) -> dict[str, float | int | list[float]]:
    """Per-run metrics from the measured calls plus what the cluster counted (`extra`).

    `p50_latency_s`, `p95_latency_s`, `p99_latency_s` are over the completed calls;
    the `_all_` ones over every call its user did not abandon, a failed or lost call
    counting as a miss (infinite), and `completed_share` is the share of those calls
    that completed: what a service-level objective judges.
    """
    window_s = params.horizon_s - params.warmup_s
    measured = calls[calls["measured"]]
    done = measured[measured["outcome"] == COMPLETED]
    counts = measured["outcome"].value_counts()
    latency = done["server_latency_s"].to_numpy()
    n = len(measured)
    judged = measured[measured["outcome"] != ABANDONED]
    latency_all = np.where(
        judged["outcome"].to_numpy() == COMPLETED, judged["server_latency_s"].to_numpy(), math.inf
    )
    ended_in_window = calls[
        (calls["outcome"] == COMPLETED)
        & (calls["end_s"] >= params.warmup_s)
        & (calls["end_s"] < params.horizon_s)
    ]

    nan = float("nan")

    def q(p: float) -> float:
        return float(np.quantile(latency, p)) if len(latency) else nan

    summary: dict[str, Any] = {
        "calls": n,
        "completed": int(counts.get(COMPLETED, 0)),
        "failed": int(counts.get(FAILED, 0)),
        "lost": int(counts.get(LOST, 0)),
        "abandoned": int(counts.get(ABANDONED, 0)),
        "completed_fraction": float(len(done) / n) if n else nan,
        "completed_share": float(len(done) / len(judged)) if len(judged) else nan,
        "goodput_per_s": len(ended_in_window) / window_s,
        "mean_latency_s": float(latency.mean()) if len(latency) else nan,
        "p50_latency_s": q(0.50),
        "p95_latency_s": q(0.95),
        "p99_latency_s": q(0.99),
        "p50_latency_all_s": quantile_counting_misses(latency_all, 0.50),
        "p95_latency_all_s": quantile_counting_misses(latency_all, 0.95),
        "failed_fraction": float(counts.get(FAILED, 0) / n) if n else float("nan"),
        "mean_time_in_system_s": float(done["time_in_system_s"].mean()) if len(done) else nan,
        "mean_queue_wait_s": float(done["queue_wait_s"].mean()) if len(done) else nan,
        "waited_fraction": float((done["queue_wait_s"] > 0).mean()) if len(done) else nan,
        "rounds": int(measured["rounds"].sum()),
        "re_prompts": int(measured["re_prompts"].sum()),
        "new_questions": int(measured["new_questions"].sum()),
        "restarts": int(measured["restarts"].sum()),
        # Times the servers lost a call's progress: restarted by the client, or lost for good.
        "state_losses": int(measured["restarts"].sum() + counts.get(LOST, 0)),
        "retries": int(measured["retries"].sum()),
        "offloads": int(measured["offloads"].sum()),
        # requestStates refused as too old: the user was asked again from the start.
        "expired_states": int(measured["expired_states"].sum()),
        "cpu_s": float(measured["cpu_s"].sum()),
        "wasted_cpu_s": float(measured["wasted_cpu_s"].sum()),
        "store_ops": int(measured["store_ops"].sum()),
        "bytes_in": int(measured["bytes_in"].sum()),
        "bytes_out": int(measured["bytes_out"].sum()),
    }
    summary.update(extra)
    return summary

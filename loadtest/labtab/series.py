"""The swarm second by second, for the Lab chart: requests, failures and held calls on the
wall clock, and which errors came when.

Locust's charts plot requests per second against the browser's clock and know nothing of
the lab's faults. The Lab chart plots the same traffic on the same clock with each fault's
span drawn over it (`loadtest.swarm.event_log`), and the held calls beside: the count that
makes a legacy drain wait. The traffic is Locust's own count of HTTP requests and
failures in each second they were made (its `Aggregated` row: requests only,
`loadtest.swarm.locust_stats`); workers report to their master every few seconds, so only
seconds older than `REPORT_LAG_S` are drawn, whole. A sampler in the master reads, every
second, the replicas' own held and in-flight counts (their `/healthz`) and Locust's errors
by round kind, so that each error is known to have come during a fault or not: an error
reaching the master up to `REPORT_LAG_S` after a fault ended is still the fault's.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loadtest.swarm.event_log import FaultSpan, clock, fault_during
from loadtest.swarm.failure_reasons import explain, reason

#: How long after it happened a request may reach the master's statistics (Locust workers
#: report every 3 s): seconds younger than this are not drawn yet, and failures this long
#: after a fault still count as the fault's.
REPORT_LAG_S = 5.0
#: Seconds of history the chart keeps (the last quarter of an hour).
WINDOW_S = 900


@dataclass(frozen=True)
class Load:
    """What the replicas report at one moment: held calls and requests in flight, summed."""

    held: int
    in_flight: int


@dataclass(frozen=True)
class Totals:
    """Locust's counts since the swarm started: HTTP requests and failures in each second
    (`{epoch second: n}`), failures by error (`(round kind, error text)`) and requests by
    round kind."""

    requests_per_s: dict[int, int]
    failures_per_s: dict[int, int]
    errors: dict[tuple[str, str], int]
    requests_by_kind: dict[str, int]


def error_text(raw: str) -> str:
    """Locust's error as a person reads it: `CatchResponseError('JSON-RPC -32600')` ->
    `JSON-RPC -32600`."""
    found = re.fullmatch(r"\w+\((['\"])(.*)\1\)", raw.strip())
    return found.group(2) if found else raw


def locust_totals(stats: Any) -> Totals:
    """The totals of Locust's `RequestStats` (the master's merge of every worker's)."""
    errors: dict[tuple[str, str], int] = {}
    for error in list(stats.errors.values()):
        if error.method == "CALL":
            continue  # a whole call's outcome; its failing requests are counted apart
        key = (error.name, error_text(str(error.error)))
        errors[key] = errors.get(key, 0) + error.occurrences
    by_kind = {
        name: entry.num_requests
        for (name, method), entry in list(stats.entries.items())
        if method != "CALL"
    }
    total = stats.total
    return Totals(dict(total.num_reqs_per_sec), dict(total.num_fail_per_sec), errors, by_kind)


@dataclass
class LabSeries:
    """The replicas' load over the last `WINDOW_S` seconds, and when each error rose."""

    #: `(t, Load)` samples, oldest first.
    loads: deque[tuple[float, Load]] = field(default_factory=lambda: deque(maxlen=WINDOW_S))
    #: When each error's occurrences rose, and by how much: `{(kind, error): [(t, n)]}`.
    error_times: dict[tuple[str, str], list[tuple[float, int]]] = field(default_factory=dict)
    _last_errors: dict[tuple[str, str], int] = field(default_factory=dict)

    def sample(self, t_s: float, totals: Totals, load: Load | None) -> None:
        """Note the replicas' load at `t_s`, and the errors that rose since the last sample."""
        if load is not None:
            self.loads.append((t_s, load))
        if sum(totals.errors.values()) < sum(self._last_errors.values()):
            self.error_times.clear()  # Locust's statistics were reset (a new start)
            self._last_errors = {}
        for key, count in totals.errors.items():
            rose = count - self._last_errors.get(key, 0)
            if rose > 0:
                self.error_times.setdefault(key, []).append((t_s, rose))
        self._last_errors = dict(totals.errors)

    def failures_explained(
        self, totals: Totals, spans: list[FaultSpan], utc_offset_min: int | None = None
    ) -> list[dict[str, Any]]:
        """Each round kind and error so far, most frequent first: `kind`, `error`, `count`,
        `requests` of the kind, `why` (during which fault, and the reason) and the whole
        `sentence`."""
        explained = []
        for (kind, error), count in sorted(totals.errors.items(), key=lambda kv: -kv[1]):
            span = fault_during(spans, self.error_times.get((kind, error), []), REPORT_LAG_S)
            during = ""
            if span is not None:
                end = "now" if span.end_s is None else clock(span.end_s, utc_offset_min)
                during = f"{span.said} ({clock(span.start_s, utc_offset_min)}-{end})"
            fault = span.fault if span else None
            requests = max(totals.requests_by_kind.get(kind, 0), count)
            why = reason(kind, fault, error)
            explained.append(
                {
                    "kind": kind,
                    "error": error,
                    "count": count,
                    "requests": requests,
                    "why": f"during {during}: {why}" if during else why,
                    "sentence": explain(
                        kind, count, requests, fault=fault, during=during, error=error
                    ),
                }
            )
        return explained

    def traffic(self, totals: Totals, now_s: float) -> list[list[int]]:
        """`[t_ms, requests, failures]` for each whole second of the window the master has
        heard of in full (older than `REPORT_LAG_S`), from the first second with traffic."""
        seconds = totals.requests_per_s.keys() | totals.failures_per_s.keys()
        last = int(now_s - REPORT_LAG_S)
        first = max(min(seconds, default=last + 1), last - WINDOW_S)
        return [
            [t * 1000, totals.requests_per_s.get(t, 0), totals.failures_per_s.get(t, 0)]
            for t in range(first, last + 1)
        ]

    def load_json(self) -> list[list[int]]:
        """`[t_ms, held, in flight]` for each sample of the replicas' load."""
        return [[round(t * 1000), load.held, load.in_flight] for t, load in self.loads]


def sample_forever(
    series: LabSeries,
    totals: Callable[[], Totals | None],
    load: Callable[[], Load | None],
    every_s: float = 1.0,
) -> threading.Thread:
    """Sample `series` every `every_s` in a daemon thread (a greenlet in Locust's master)."""

    def run() -> None:
        while True:
            started = time.monotonic()
            counts = totals()
            if counts is not None:
                series.sample(time.time(), counts, load())
            time.sleep(max(0.0, every_s - (time.monotonic() - started)))

    thread = threading.Thread(target=run, name="lab-series", daemon=True)
    thread.start()
    return thread

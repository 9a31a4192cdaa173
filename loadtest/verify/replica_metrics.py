"""A deployment's replicas read from their Prometheus `/metrics`, where they expose the
process's own figures: its CPU time (`process_cpu_seconds_total`) and its resident memory
(`process_resident_memory_bytes`), as the Prometheus client's process collector writes
them. A replica the lab does not run shows it nothing else: what no URL exposes is not
seen, and the check says so rather than judge it.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from dataclasses import dataclass, field

import httpx

#: The process figures read, by what they are.
CPU_SECONDS = "process_cpu_seconds_total"
RSS_BYTES = "process_resident_memory_bytes"
#: Seconds a scrape may take before the reading is skipped.
SCRAPE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ProcessReading:
    """One scrape of a replica: when, its CPU seconds so far and resident memory (None
    for a figure its `/metrics` does not state)."""

    t: float
    cpu_s: float | None
    rss_bytes: float | None


def parse_process_figures(text: str) -> tuple[float | None, float | None]:
    """The CPU seconds and resident bytes a `/metrics` page states (None when absent or
    not a finite, non-negative number)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name in (CPU_SECONDS, RSS_BYTES) and rest:
            with contextlib.suppress(ValueError):
                value = float(rest.split()[0])
                if math.isfinite(value) and value >= 0:
                    found[name] = value
    return found.get(CPU_SECONDS), found.get(RSS_BYTES)


@dataclass
class MetricsSampler:
    """Scrapes each replica's `/metrics` every `every_s` seconds during a run."""

    urls: list[str]
    every_s: float = 0.5
    token: str | None = None
    readings: dict[str, list[ProcessReading]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self, http: httpx.Client) -> None:
        for url in self.urls:
            try:
                text = http.get(url).text
            except httpx.HTTPError:
                continue  # the next scrape will do
            cpu_s, rss_bytes = parse_process_figures(text)
            self.readings.setdefault(url, []).append(ProcessReading(time.time(), cpu_s, rss_bytes))

    def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        with httpx.Client(timeout=SCRAPE_TIMEOUT_S, headers=headers) as http:
            self._read(http)
            while not self._stop.wait(self.every_s):
                self._read(http)
            self._read(http)

    def start(self) -> MetricsSampler:
        if self.urls:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(SCRAPE_TIMEOUT_S * len(self.urls) + 5)

    def per_replica(self, start: float, stop: float, workers: int) -> dict[str, dict[str, float]]:
        """Each replica whose `/metrics` stated both figures in the window: its peak
        resident memory and its CPU use (of its workers' time), in the shape the live
        verdict reads (`loadtest.verify.live_verdict.per_replica`); its connections and
        its wait for a CPU are not among a process's figures (0)."""
        found: dict[str, dict[str, float]] = {}
        for url, readings in self.readings.items():
            inside = [r for r in readings if start <= r.t <= stop]
            cpu = [r for r in inside if r.cpu_s is not None]
            rss = [r.rss_bytes for r in inside if r.rss_bytes is not None]
            if len(cpu) < 2 or not rss:
                continue
            span_s = cpu[-1].t - cpu[0].t
            cpu_s = max(0.0, (cpu[-1].cpu_s or 0.0) - (cpu[0].cpu_s or 0.0))
            found[url] = {
                "peak_connections": 0,
                "peak_rss_bytes": max(rss),
                "cpu_utilization": cpu_s / (span_s * workers) if span_s > 0 else math.nan,
                "cpu_wait_share": 0.0,
                "cpu_s": cpu_s,
                "cpu_wait_s": 0.0,
            }
        return found

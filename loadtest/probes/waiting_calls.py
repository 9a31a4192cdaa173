"""The legacy calls a cluster holds waiting for an answer, counted a few times a second.

Each replica reports its own count on `/healthz` (`waiting_calls`); their sum over time,
averaged over a window, is what the calibration multiplies by a held call's memory.
"""

from __future__ import annotations

import statistics
import threading
import time

import httpx

from loadtest.harness.cluster import Cluster


class WaitingSampler:
    """Counts the legacy calls waiting on every replica, a few times a second."""

    def __init__(self, cluster: Cluster, every_s: float = 0.25) -> None:
        self.cluster = cluster
        self.every_s = every_s
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=1.0) as http:
            while not self._stop.wait(self.every_s):
                waiting = 0
                for replica in list(self.cluster.replicas.values()):
                    try:
                        waiting += http.get(f"{replica.base_url}/healthz").json()["waiting_calls"]
                    except (httpx.HTTPError, ValueError, KeyError):
                        continue
                self.samples.append((time.time(), waiting))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def mean(self, start: float, stop: float) -> float:
        window = [n for t, n in self.samples if start <= t <= stop]
        return statistics.fmean(window) if window else 0.0

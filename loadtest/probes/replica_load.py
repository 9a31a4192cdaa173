"""What each replica of a running cluster holds and spends, read a few times a second from
outside it: its open connections, its resident memory and its CPU.

- **Connections**: the TCP connections open on the replica's port (established, or closed
  by the peer and not yet by the replica), from the kernel's table (/proc/net/tcp and
  tcp6). These are what the replica's `--max-connections` counts: HAProxy's connections
  to it, requests and health checks and idle keep-alives alike.
- **Memory**: the resident memory (VmRSS) of the replica's process and of its children
  (the worker processes that run CPU-heavy tool work), what a container's limit would be
  held against.
- **CPU**: the CPU time of the same processes, and the time their threads waited for a
  CPU while runnable (`loadtest/probes/replica_cpu.py`): a replica that waited long for a
  CPU other programs held was not given the machine a plan assumes.

A sample is a moment; the peaks are the largest sampled, so a peak shorter than the
interval between samples can be missed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from loadtest.probes.held_memory import rss_bytes
from loadtest.probes.replica_cpu import children, cpu_seconds, run_queue_wait_seconds

#: TCP states that hold one of the replica's connections: ESTABLISHED and CLOSE_WAIT.
_HELD_STATES = {"01", "08"}


def open_connections(ports: set[int]) -> dict[int, int]:
    """Connections open on each of `ports` (local side), from the kernel's TCP tables."""
    counts = dict.fromkeys(ports, 0)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as lines:
                next(lines, None)
                for line in lines:
                    fields = line.split()
                    port = int(fields[1].rsplit(":", 1)[1], 16)
                    if port in counts and fields[3] in _HELD_STATES:
                        counts[port] += 1
        except OSError:
            continue
    return counts


@dataclass
class ReplicaTrace:
    """One replica's samples: (time, connections, resident bytes, CPU s, wait s)."""

    pid: int
    port: int
    samples: list[tuple[float, int, int, float, float]] = field(default_factory=list)

    def peak_connections(self, start: float = 0.0, stop: float = float("inf")) -> int:
        return max((s[1] for s in self.samples if start <= s[0] <= stop), default=0)

    def peak_rss_bytes(self, start: float = 0.0, stop: float = float("inf")) -> int:
        return max((s[2] for s in self.samples if start <= s[0] <= stop), default=0)

    def cpu_in(self, start: float, stop: float) -> tuple[float, float, float]:
        """CPU seconds, seconds waited for a CPU, and the span, between the samples
        closest inside [start, stop]."""
        inside = [s for s in self.samples if start <= s[0] <= stop]
        if len(inside) < 2:
            return 0.0, 0.0, 0.0
        first, last = inside[0], inside[-1]
        return last[3] - first[3], last[4] - first[4], last[0] - first[0]


class ReplicaSampler:
    """Samples every replica of a cluster (name -> (pid, port)) every `every_s` seconds,
    in a thread of its own, from `start` to `stop`."""

    def __init__(self, replicas: dict[str, tuple[int, int]], every_s: float = 0.2) -> None:
        self.traces = {name: ReplicaTrace(pid, port) for name, (pid, port) in replicas.items()}
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        now = time.time()
        ports = open_connections({trace.port for trace in self.traces.values()})
        for trace in self.traces.values():
            pids = [trace.pid, *children(trace.pid)]
            try:
                rss = sum(_quiet(rss_bytes, pid) for pid in pids)
                cpu = sum(_quiet(cpu_seconds, pid) for pid in pids)
                wait = sum(_quiet(run_queue_wait_seconds, pid) for pid in pids)
            except FileNotFoundError:
                continue
            trace.samples.append((now, ports[trace.port], int(rss), cpu, wait))

    def _run(self) -> None:
        self._sample()
        while not self._stop.wait(self.every_s):
            self._sample()
        self._sample()

    def start(self) -> ReplicaSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def _quiet(read: Callable[[int], float], pid: int) -> float:
    """A reading of a process that may have just exited (a worker): 0 when it has, but the
    replica itself gone is an error the caller sees."""
    try:
        return float(read(pid))
    except (FileNotFoundError, ProcessLookupError, RuntimeError):
        if not os.path.exists(f"/proc/{pid}"):
            return 0.0
        raise

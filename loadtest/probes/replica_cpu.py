"""The CPU a replica process spends per request, from the operating system's own count.

A replica's CPU time (user + system, from /proc) is read before and after a stretch of
load; across several stretches, CPU = idle x time + per_round x rounds is fitted by least
squares, so the background work a replica does when idle (health checks, timers) is not
charged to the requests.

On a shared machine a replica also waits for a CPU while other programs hold it: the
scheduler counts that time too (/proc/<pid>/task/*/schedstat, "waiting on a runqueue").
CPU time plus that wait is how long the replica was busy with its requests, which is
what its clients feel as service time.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _schedstat_seconds(pid: int, field: int) -> float:
    """One field of the scheduler's counts (0: run on a CPU, 1: waited for one), summed
    over the threads of a process, in seconds."""
    total_ns = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total_ns += int(stat.read().split()[field])
        except (FileNotFoundError, IndexError, ValueError):
            continue  # a thread that ended, or a kernel without schedstats
    return total_ns / 1e9


def run_seconds(pid: int) -> float:
    """Seconds the threads of a process have run on a CPU, to the nanosecond (schedstat;
    /proc/<pid>/stat counts in ticks of 10 ms)."""
    return _schedstat_seconds(pid, 0)


def run_queue_wait_seconds(pid: int) -> float:
    """Seconds the threads of a process have waited for a CPU while runnable (schedstat)."""
    return _schedstat_seconds(pid, 1)


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a replica's CPU workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid:
            found.append(int(entry))
    return found


def process_cpu(pid: int) -> Callable[[], float]:
    """A reader of the CPU seconds process `pid` and the children it has now (its CPU
    workers) have run, to the nanosecond (schedstat)."""
    pids = [pid, *children(pid)]
    return lambda: sum(run_seconds(p) for p in pids if os.path.exists(f"/proc/{p}"))


@dataclass
class CpuStretch:
    """CPU seconds some processes used over a wall-clock span, and the rounds they served;
    `wait_s`: the seconds they were runnable but waited for a CPU other programs held."""

    cpu_s: float = 0.0
    span_s: float = 0.0
    rounds: int = 0
    wait_s: float = 0.0

    @property
    def busy_s(self) -> float:
        """CPU time plus the wait for a CPU: the time the work took on this machine."""
        return self.cpu_s + self.wait_s


class CpuMeter:
    """Reads the CPU time of a set of processes at the start and end of a stretch and,
    with `every_s`, a few times a second in between, so that a window inside it can be
    metered too (a load level's steady part, without the load generator's start and stop)."""

    def __init__(self, pids: Iterable[int], every_s: float | None = None) -> None:
        self.pids = list(pids)
        #: Seconds between readings inside a stretch; None: at its start and end only.
        self.every_s = every_s
        #: (wall-clock time, CPU seconds, wait seconds) read in the current stretch.
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def total(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.pids)

    def waited(self) -> float:
        return sum(run_queue_wait_seconds(pid) for pid in self.pids)

    def _read(self) -> None:
        self.samples.append((time.time(), self.total(), self.waited()))

    def _run(self, every_s: float) -> None:
        try:
            while not self._stop.wait(every_s):
                self._read()
        except FileNotFoundError:
            return  # a replica that exited mid-stretch: its counters are gone

    def start(self) -> None:
        """Begin a stretch (a meter may meter several, one after the other)."""
        self.samples = []
        self._read()
        if self.every_s:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, args=(self.every_s,), daemon=True)
            self._thread.start()

    def stop(self, rounds: int) -> CpuStretch:
        """The stretch from `start` to now, in which `rounds` rounds were served."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(5)
            self._thread = None
        self._read()
        return self.window(self.samples[0][0], self.samples[-1][0], rounds)

    def window(self, start: float, stop: float, rounds: int = 0) -> CpuStretch:
        """The readings closest inside [start, stop] (wall-clock seconds), as a stretch."""
        inside = [s for s in self.samples if start <= s[0] <= stop] or self.samples[-1:]
        (t0, cpu0, wait0), (t1, cpu1, wait1) = inside[0], inside[-1]
        return CpuStretch(cpu1 - cpu0, t1 - t0, rounds, wait1 - wait0)


#: The most CPU per second an idle replica plausibly uses (health checks, timers).
MAX_IDLE_CPU = 0.05


def busy_per_round(stretch: CpuStretch, background_per_s: float) -> float:
    """The busy seconds a stretch spent per round served, without the replica's background
    work (`background_per_s`, fitted by `fit_cpu_per_round`): what a round itself took."""
    return max(0.0, stretch.busy_s - background_per_s * stretch.span_s) / max(stretch.rounds, 1)


def fit_cpu_per_round(stretches: list[CpuStretch]) -> tuple[float, float]:
    """CPU seconds per round, and background CPU per second, fitted over the stretches."""
    spans = np.array([s.span_s for s in stretches])
    rounds = np.array([s.rounds for s in stretches], dtype=float)
    cpu = np.array([s.cpu_s for s in stretches])
    (idle, per_round), *_ = np.linalg.lstsq(np.column_stack([spans, rounds]), cpu, rcond=None)
    # A fit the noise spoiled (a replica idles at about 1% of a CPU): the plain ratio.
    if per_round <= 0 or not 0 <= idle <= MAX_IDLE_CPU:
        return float(cpu.sum() / max(rounds.sum(), 1)), 0.0
    return float(per_round), float(idle)

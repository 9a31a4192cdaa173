"""The CPU a replica process spends per request, from the operating system's own count.

A replica's CPU time (user + system, from /proc) is read before and after a stretch of
load; across several stretches, CPU = idle x time + per_round x rounds is fitted by least
squares, so the background work a replica does when idle (health checks, timers) is not
charged to the requests.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class CpuStretch:
    """CPU seconds some processes used over a wall-clock span, and the rounds they served."""

    cpu_s: float = 0.0
    span_s: float = 0.0
    rounds: int = 0


class CpuMeter:
    """Reads the CPU time of a set of processes at the start and end of a stretch."""

    def __init__(self, pids: Iterable[int]) -> None:
        self.pids = list(pids)
        self._cpu = 0.0
        self._at = 0.0

    def total(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.pids)

    def start(self) -> None:
        self._cpu, self._at = self.total(), time.monotonic()

    def stop(self, rounds: int) -> CpuStretch:
        return CpuStretch(self.total() - self._cpu, time.monotonic() - self._at, rounds)


def fit_cpu_per_round(stretches: list[CpuStretch]) -> tuple[float, float]:
    """CPU seconds per round, and background CPU per second, fitted over the stretches."""
    spans = np.array([s.span_s for s in stretches])
    rounds = np.array([s.rounds for s in stretches], dtype=float)
    cpu = np.array([s.cpu_s for s in stretches])
    (idle, per_round), *_ = np.linalg.lstsq(np.column_stack([spans, rounds]), cpu, rcond=None)
    if per_round <= 0 or idle < 0:  # a fit the noise spoiled: fall back to the plain ratio
        return float(cpu.sum() / max(rounds.sum(), 1)), 0.0
    return float(per_round), float(idle)

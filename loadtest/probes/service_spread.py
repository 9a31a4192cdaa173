"""The spread of a replica's service time per round, seen from the kernel's side of it.

A replica is one event loop on one thread. While it works on a round its thread is
runnable (state `R` in /proc: on a CPU, or waiting for one that other programs hold);
between rounds it sleeps in epoll (`S`). The scheduler counts, per thread, the time run
on a CPU and the time waited for one (/proc/<pid>/task/<pid>/schedstat); read while the
thread sleeps, just before and just after a runnable stretch, their increase is that
stretch's CPU and wait: its service time, the same busy time the calibration's mean
comes from (`loadtest/probes/replica_cpu.py`), round by round.

No queueing delay is in it when one round is served at a time: the calibration samples
one user calling in a closed loop. Its rounds never overlap, but the pause between one
call's last round and the next call's first can be shorter than the reader sees, which
merges two rounds into one stretch; such a stretch has twice a round's CPU and is left
out, as are stretches with much less CPU than a round (health checks, /healthz polls).

The reader is a process of its own (`python -m loadtest.probes.service_spread PID`, stopped by
SIGTERM) kept off the replica's core: in a thread of the calibrating process it would
wait for that process's interpreter lock and miss pauses.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

#: Seconds between two reads of the thread's state: the shorter, the fewer pauses between
#: rounds go unseen (a missed pause costs a merged stretch, not a wrong time).
SAMPLE_EVERY_S = 0.0005
#: The reader's scheduling priority (nice) where the operating system allows it.
READER_NICE = -10


@dataclass(frozen=True)
class Stretch:
    """One runnable stretch of the replica's thread: its busy time (CPU plus the wait for
    a CPU) and its CPU time alone, seconds."""

    busy_s: float
    cpu_s: float


@dataclass(frozen=True)
class ServiceSpread:
    """Mean, coefficient of variation (std / mean) and 95th percentile of the service time
    of `rounds` rounds timed one by one; `merged`: stretches left out as two or more rounds;
    `busy_s`: the same run's mean busy time per round from the process's counters, which
    the rounds' mean should match; `served`: rounds the replica served meanwhile."""

    mean_s: float
    cv: float
    rounds: int
    p95_s: float
    merged: int = 0
    busy_s: float = math.nan
    served: int = 0


def spread_of(stretches: list[Stretch], round_cpu_s: float) -> ServiceSpread:
    """The spread of the busy time of the stretches that hold one round: CPU between half
    and one and a half times a round's (`round_cpu_s`)."""
    single = sorted(s.busy_s for s in stretches if 0.5 <= s.cpu_s / round_cpu_s <= 1.5)
    merged = sum(s.cpu_s / round_cpu_s > 1.5 for s in stretches)
    if len(single) < 2:
        return ServiceSpread(math.nan, math.nan, len(single), math.nan, merged)
    busy = np.asarray(single)
    p95 = single[min(len(single) - 1, int(0.95 * len(single)))]
    return ServiceSpread(
        float(busy.mean()), float(busy.std(ddof=1) / busy.mean()), len(single), p95, merged
    )


def run_and_wait_ns(fd: int) -> tuple[int, int]:
    """Nanoseconds a thread has run on a CPU and waited for one, from an open schedstat file.

    Both are final while the thread sleeps (the scheduler adds a period when it ends), so
    two reads taken while it sleeps bracket its runnable stretches exactly.
    """
    run_ns, wait_ns, _ = os.pread(fd, 256, 0).split()
    return int(run_ns), int(wait_ns)


def thread_state(fd: int) -> str:
    """The one-letter scheduler state in an open /proc/.../stat file (re-read from its start)."""
    text = os.pread(fd, 1024, 0)
    return chr(text[text.rindex(b")") + 2])


def sample_stretches(
    pid: int, stop: threading.Event, every_s: float = SAMPLE_EVERY_S
) -> list[Stretch]:
    """Each runnable stretch of `pid`'s main thread until `stop` is set, with the CPU time
    and the wait for a CPU the scheduler counted for it."""
    # Keep the reader off the replica's core (CPU 0 when the cluster pins cores), so
    # that it does not stretch what it times.
    others = os.sched_getaffinity(0) - {0}
    if others:
        os.sched_setaffinity(0, others)
    # Where allowed, read at a high priority: a reader held up by the load it measures
    # misses more of the pauses between rounds.
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, READER_NICE)
    stretches: list[Stretch] = []
    task = f"/proc/{pid}/task/{pid}"
    try:
        stat, sched = (
            os.open(f"{task}/stat", os.O_RDONLY),
            os.open(f"{task}/schedstat", os.O_RDONLY),
        )
    except FileNotFoundError:
        return stretches
    try:
        # The counters when the thread was last seen asleep, and whether it ran since.
        asleep: tuple[int, int] | None = None
        ran = False
        while not stop.is_set():
            try:
                runnable = thread_state(stat) == "R"
                counters = None if runnable else run_and_wait_ns(sched)
                # Asleep on both sides of the counters' read: they did not move during it.
                runnable = runnable or thread_state(stat) == "R"
            except OSError:
                break  # the replica exited
            if runnable:
                ran = asleep is not None
            elif counters is not None:
                if ran and asleep is not None:
                    cpu_ns, wait_ns = counters[0] - asleep[0], counters[1] - asleep[1]
                    stretches.append(Stretch((cpu_ns + wait_ns) / 1e9, cpu_ns / 1e9))
                asleep, ran = counters, False
            time.sleep(every_s)
    finally:
        os.close(stat)
        os.close(sched)
    return stretches


class RunStateSampler:
    """Records the runnable stretches of a process's main thread, from a process of its own."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.stretches: list[Stretch] = []
        self._process: subprocess.Popen | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "loadtest.probes.service_spread", str(self.pid)],
            stdout=subprocess.PIPE,
        )

    def stop(self) -> list[Stretch]:
        process, self._process = self._process, None
        if process is None:
            return self.stretches
        process.send_signal(signal.SIGTERM)
        try:
            out, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=5)
            raise
        self.stretches = [Stretch(*pair) for pair in json.loads(out or b"[]")]
        return self.stretches


def main(argv: list[str]) -> None:
    """Sample the process `argv[0]` until SIGTERM, then print [busy_s, cpu_s] pairs as JSON."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stretches = sample_stretches(int(argv[0]), stop)
    print(json.dumps([[s.busy_s, s.cpu_s] for s in stretches]))


if __name__ == "__main__":
    main(sys.argv[1:])

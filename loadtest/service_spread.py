"""The spread of a replica's service time per round, seen from the kernel's side of it.

A replica is one event loop on one thread. While it works on a round its thread is
runnable (state `R` in /proc: on a CPU, or waiting for one that other programs hold);
between rounds it sleeps in epoll (`S`). So, when one round is served at a time, one
stretch of `R` is one round's service time: its CPU plus the wait for a CPU, the same
busy time the calibration's mean comes from (`loadtest/replica_cpu.py`), round by round.
No queueing delay is in it: a round that waits behind another waits while the thread is
already runnable, so its wait would merge two rounds into one stretch; the calibration
therefore samples a load of one user in a closed loop, where rounds never overlap.

The thread's state is read from /proc/<pid>/task/<pid>/stat every half millisecond by a
process of its own, kept off the replica's core; a stretch during which the reader
itself was held up (reads further apart than `LONGEST_GAP_S`) is not timed. Stretches much
shorter than a round's CPU are the replica's background work (health checks, /healthz
polls) and are left out.
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

#: Seconds between two reads of the thread's state: well under a round (8 ms of CPU), so
#: a stretch is measured to about +/- this.
SAMPLE_EVERY_S = 0.0005
#: Two reads further apart than this could hide the pause between two rounds (a client
#: answers a round in a few milliseconds at the least): the stretch is not timed.
LONGEST_GAP_S = 0.002
#: The reader's scheduling priority (nice) where the operating system allows it.
READER_NICE = -10


@dataclass(frozen=True)
class ServiceSpread:
    """Mean and coefficient of variation (std / mean) of the service time of `rounds` rounds;
    `busy_s`: the same run's mean busy time per round from the process's counters, which
    the stretches' mean should match if each stretch is one round; `served`: rounds the
    replica served meanwhile (timed or not)."""

    mean_s: float
    cv: float
    rounds: int
    p95_s: float
    busy_s: float = math.nan
    served: int = 0
    gaps_per_s: float = 0.0


def spread_of(
    stretches_s: list[float], shortest_s: float, gaps_per_s: float = 0.0
) -> ServiceSpread:
    """The service-time spread of the runnable stretches at least `shortest_s` long.

    A stretch of L seconds is timed only if none of the reader's gaps (`gaps_per_s`, about
    a Poisson stream) fell in it, with probability exp(-rate x L): long stretches are
    timed less often, so each counts with the inverse of that probability.
    """
    rounds = np.sort(np.asarray([s for s in stretches_s if s >= shortest_s]))
    if len(rounds) < 2:
        return ServiceSpread(math.nan, math.nan, len(rounds), math.nan)
    weights = np.exp(gaps_per_s * rounds)
    mean = float(np.average(rounds, weights=weights))
    variance = float(np.average((rounds - mean) ** 2, weights=weights))
    variance *= len(rounds) / (len(rounds) - 1)  # as the sample's own (n - 1) estimate
    share = np.cumsum(weights) / weights.sum()
    p95 = float(rounds[min(len(rounds) - 1, int(np.searchsorted(share, 0.95)))])
    return ServiceSpread(mean, math.sqrt(variance) / mean, len(rounds), p95)


def thread_state(fd: int) -> str:
    """The one-letter scheduler state in an open /proc/.../stat file (re-read from its start)."""
    text = os.pread(fd, 1024, 0)
    return chr(text[text.rindex(b")") + 2])


def sample_stretches(
    pid: int, stop: threading.Event, every_s: float, longest_gap_s: float
) -> tuple[list[float], int, float]:
    """Seconds of each runnable stretch of `pid`'s main thread until `stop` is set, the
    number of gaps between reads too long to trust (their stretches are left out), and
    the seconds sampled."""
    # Keep the sampler off the replica's core (CPU 0 when the cluster pins cores), so
    # that it does not stretch what it times.
    others = os.sched_getaffinity(0) - {0}
    if others:
        os.sched_setaffinity(0, others)
    # Where allowed, read at a high priority: a reader held up by the load it measures
    # leaves stretches untimed, and more often long ones.
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, READER_NICE)
    stretches: list[float] = []
    unseen, sampled = 0, 0.0
    try:
        fd = os.open(f"/proc/{pid}/task/{pid}/stat", os.O_RDONLY)
    except FileNotFoundError:
        return stretches, unseen, sampled
    try:
        was_runnable, last, began = False, time.perf_counter(), math.nan
        while not stop.is_set():
            try:
                runnable = thread_state(fd) == "R"
            except OSError:
                break  # the replica exited
            now = time.perf_counter()
            # A gap: the reader itself waited for a CPU. An edge inside it is not known to
            # a millisecond, and a pause between two rounds may hide in it: the stretch it
            # falls in is not timed.
            gap = now - last > longest_gap_s
            unseen += gap
            if runnable != was_runnable:
                # The change happened between the last read and this one: its midpoint.
                edge = (last + now) / 2
                if runnable:
                    began = math.nan if gap else edge
                elif not (gap or math.isnan(began)):
                    stretches.append(edge - began)
                was_runnable = runnable
            elif gap:
                began = math.nan
            sampled += now - last
            last = now
            time.sleep(every_s)
    finally:
        os.close(fd)
    return stretches, unseen, sampled


class RunStateSampler:
    """Records the stretches during which a process's main thread was runnable.

    The sampling runs in a process of its own (`python -m loadtest.service_spread PID`,
    stopped by SIGTERM): in a thread it would wait for the calibrating process's
    interpreter lock, milliseconds at a time, and miss edges.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.stretches_s: list[float] = []
        #: Gaps between two reads longer than `LONGEST_GAP_S` (stretches not timed).
        self.unseen = 0
        self.sampled_s = 0.0
        self._process: subprocess.Popen | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "loadtest.service_spread", str(self.pid)],
            stdout=subprocess.PIPE,
        )

    def stop(self) -> list[float]:
        process, self._process = self._process, None
        if process is None:
            return self.stretches_s
        process.send_signal(signal.SIGTERM)
        try:
            out, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=5)
            raise
        found = json.loads(out or b"{}")
        self.stretches_s, self.unseen = found.get("stretches_s", []), found.get("unseen", 0)
        self.sampled_s = found.get("sampled_s", 0.0)
        return self.stretches_s

    @property
    def gaps_per_s(self) -> float:
        """How often the reader was held up: the rate `spread_of` corrects for."""
        return self.unseen / self.sampled_s if self.sampled_s else 0.0


def main(argv: list[str]) -> None:
    """Sample the process `argv[0]` until SIGTERM, then print the stretches as JSON."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stretches, unseen, sampled = sample_stretches(int(argv[0]), stop, SAMPLE_EVERY_S, LONGEST_GAP_S)
    print(json.dumps({"stretches_s": stretches, "unseen": unseen, "sampled_s": sampled}))


if __name__ == "__main__":
    main(sys.argv[1:])

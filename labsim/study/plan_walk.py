"""The walk of one architecture from its first guess to its answer, one size at a time.

A plan simulates every fleet size between its first guess and its answer, skipping none:
from a guess that meets, it walks down until a size fails (the answer is the last that
met, or a single replica); from one that fails, up until a size meets. The size just
below the answer is then always simulated, and says what breaks with one replica fewer.

Walking up stops early when more replicas stop helping: the fleet fails on latency or
completion alone, its CPU is far from busy, and its p95 has not fallen over the last
sizes, so the SLO sits at the rounds' own latency, not in a queue a larger fleet would
shorten.
"""

from __future__ import annotations

from labsim.study.constraints import RESOURCES
from labsim.study.plan_verdict import Verdict

#: Walking up stops when the p95 fell less than this share over the last `FLAT_SIZES` sizes.
FLAT_GAIN = 0.05
FLAT_SIZES = 3
#: ... and the CPU's use (of its target) stayed below this: no queue to shorten.
IDLE_CPU_USE = 0.5


class Walk:
    """The sizes one architecture has simulated, the next to simulate, and its answer."""

    def __init__(self, guess: int, max_replicas: int) -> None:
        self.guess = max(1, min(guess, max_replicas))
        self.max_replicas = max_replicas
        self.next: int | None = self.guess
        self.results: dict[int, Verdict] = {}
        self.answer: int | None = None
        self.stopped: str = ""  # why the walk ended without an answer
        self._down: bool | None = None  # the direction, once the guess is judged

    def record(self, verdict: Verdict) -> None:
        """Take the verdict of the size just simulated and choose the next (None: done)."""
        n = verdict.replicas
        self.results[n] = verdict
        if self._down is None:
            self._down = verdict.meets
        if self._down:
            if not verdict.meets:
                self.answer, self.next = n + 1, None
            elif n == 1:
                self.answer, self.next = 1, None
            else:
                self.next = n - 1
        elif verdict.meets:
            self.answer, self.next = n, None
        elif n >= self.max_replicas:
            self.next = None
            self.stopped = f"no fleet up to --max-replicas {self.max_replicas} meets the SLO"
        elif self._flat(n):
            self.next = None
            earlier = self.results[n - FLAT_SIZES + 1]
            self.stopped = (
                f"more replicas stopped helping: p95 {earlier.p95_ms:.3g} ms with "
                f"{earlier.replicas} replicas, {verdict.p95_ms:.3g} ms with {n}, the CPU at "
                f"{verdict.use['cpu']:.0%} of its target; the SLO is at the rounds' own latency"
            )
        else:
            self.next = n + 1

    def _flat(self, n: int) -> bool:
        last = [self.results.get(k) for k in range(n - FLAT_SIZES + 1, n + 1)]
        if any(v is None for v in last):
            return False
        verdicts = [v for v in last if v is not None]
        only_latency = all(not set(v.broke()) & set(RESOURCES) for v in verdicts)
        idle = all(v.use["cpu"] < IDLE_CPU_USE for v in verdicts)
        first, final = verdicts[0].p95_ms, verdicts[-1].p95_ms
        return only_latency and idle and final >= first * (1 - FLAT_GAIN)

"""Load as engineers shape it: how many users run at each second of a swarm.

Each shape keeps Locust's `LoadTestShape` contract: its `tick()` says, at the run's current
second, how many users should run and how fast to start the missing ones, or None when
the run is over. The headless swarm hands it to Locust as a `LoadTestShape`
(`loadtest.swarm.shaped_run.locust_shape`) and asks it once a second. Kept free of Locust
itself, whose import patches the process with gevent, so that the command line and the
tests can read a schedule without it.

    ramp    from none to --users over --ramp-s, then --users until --duration
    step    --step-users more every --step-s, up to --users, until --duration
    spike   --users, then --spike-users from --spike-at-s for --spike-s, then --users again
    soak    --users reached over --ramp-s, then held for a long --duration
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

#: Users started per second when a shape asks for more at once (a step, a spike).
BURST_SPAWN_RATE = 100.0


@dataclass(frozen=True)
class ShapeSettings:
    """A shape's parameters, from the swarm's flags."""

    users: int
    duration_s: float
    spawn_rate: float = BURST_SPAWN_RATE
    ramp_s: float = 10.0
    step_s: float = 10.0
    step_users: int = 1
    spike_users: int = 0
    spike_at_s: float = 10.0
    spike_s: float = 5.0


class Schedule:
    """Load over time with Locust's `LoadTestShape` contract: a clock from the run's start
    (`reset_time`, `get_run_time`) and `tick()`."""

    def __init__(self) -> None:
        self.start_time = time.perf_counter()

    def reset_time(self) -> None:
        self.start_time = time.perf_counter()

    def get_run_time(self) -> float:
        return time.perf_counter() - self.start_time

    def tick(self) -> tuple[int, float] | None:
        raise NotImplementedError

    def next_tick_s(self) -> float:
        """Seconds until the schedule may change (a shape asked each second: a second)."""
        return 1.0


class LabShape(Schedule):
    """A shape of the lab's: users over the run's time, from its settings."""

    def __init__(self, settings: ShapeSettings) -> None:
        super().__init__()
        self.settings = settings

    def users_at(self, t_s: float) -> int | None:
        """Users running at `t_s` seconds into the run; None once it is over."""
        raise NotImplementedError

    def tick(self) -> tuple[int, float] | None:
        users = self.users_at(self.get_run_time())
        return None if users is None else (users, self.settings.spawn_rate)


class RampShape(LabShape):
    """From no user to `users` linearly over `ramp_s`, then all of them until the end."""

    def users_at(self, t_s: float) -> int | None:
        s = self.settings
        if t_s >= s.duration_s:
            return None
        if t_s >= s.ramp_s:
            return s.users
        return max(1, math.ceil(s.users * t_s / s.ramp_s))


class StepShape(LabShape):
    """`step_users` users more every `step_s` seconds, up to `users`."""

    def users_at(self, t_s: float) -> int | None:
        s = self.settings
        if t_s >= s.duration_s:
            return None
        return min(s.users, s.step_users * (1 + int(t_s // s.step_s)))


class SpikeShape(LabShape):
    """`users` throughout, but `spike_users` from `spike_at_s` for `spike_s` seconds."""

    def users_at(self, t_s: float) -> int | None:
        s = self.settings
        if t_s >= s.duration_s:
            return None
        if s.spike_at_s <= t_s < s.spike_at_s + s.spike_s:
            return s.spike_users
        return s.users


class SoakShape(RampShape):
    """A ramp to `users` followed by a long plateau: what leaks shows over its hours."""


SHAPE_CLASSES: dict[str, type[LabShape]] = {
    "ramp": RampShape,
    "step": StepShape,
    "spike": SpikeShape,
    "soak": SoakShape,
}


def shape_of(name: str, settings: ShapeSettings) -> LabShape:
    """The shape `--shape name` runs, with its settings."""
    return SHAPE_CLASSES[name](settings)

"""A headless swarm whose load changes as it runs: a shape's users, or the ceiling's rate.

Its shape (`loadtest.swarm.load_shapes`, `loadtest.swarm.rate_ceiling`) is asked once a
second how many users should run, and the runner is told when that changes, as Locust's
own shape worker does; here the run's end stops the users and keeps the workers, so that
the summary still gets every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gevent.event import Event
from locust import LoadTestShape

from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.swarm.load_shapes import Schedule, ShapeSettings, shape_of
from loadtest.swarm.plan import SwarmPlan
from loadtest.swarm.rate_ceiling import RateSteps, ceiling_search, known_broke

#: How often the shape is asked (s), as Locust's shape worker asks.
TICK_S = 1.0


def check_shape(config: LoadTestConfig, plan: SwarmPlan) -> None:
    """Refuse a shape the run cannot follow, before anything starts."""
    if (plan.shape or plan.find_ceiling) and not plan.headless:
        raise LoadTestError("--shape and --find-ceiling need --headless")
    if plan.shape and plan.find_ceiling:
        raise LoadTestError("--shape or --find-ceiling, not both: the ceiling steps the rate")
    if plan.shape and config.rate_per_s:
        raise LoadTestError("--shape shapes closed-loop users: leave --rate out")
    if plan.find_ceiling:
        ceiling_search(config, plan)


def shape_for(
    config: LoadTestConfig,
    plan: SwarmPlan,
    started: Callable[[], float],
    calls: Callable[[], list[dict[str, Any]]],
) -> Schedule | None:
    """The run's shape, or None for a run of fixed load. The ceiling's steps stop once the
    calls that started in a step (`calls()`, from the run's start `started()`) broke the SLO
    by what is known of them a moment after its end."""
    if plan.find_ceiling:
        search = ceiling_search(config, plan)

        def broken(step: int) -> bool:
            return known_broke(search, calls(), started(), step)

        return RateSteps(search, broken)
    if plan.shape:
        settings = ShapeSettings(
            users=config.users,
            duration_s=config.duration_s,
            ramp_s=plan.ramp_s,
            step_s=plan.step_s,
            step_users=plan.step_users,
            spike_users=plan.spike_users,
            spike_at_s=plan.spike_at_s,
            spike_s=plan.spike_s,
        )
        return shape_of(plan.shape, settings)
    return None


class _LocustShape(LoadTestShape):
    """A schedule of the lab's as Locust's own shape class."""

    def __init__(self, schedule: Schedule) -> None:
        super().__init__()
        self.schedule = schedule

    def reset_time(self) -> None:
        super().reset_time()
        self.schedule.reset_time()

    def tick(self) -> tuple[int, float] | None:
        return self.schedule.tick()


def locust_shape(schedule: Schedule) -> LoadTestShape:
    """The schedule as a Locust `LoadTestShape` (what `Environment.shape_class` holds)."""
    return _LocustShape(schedule)


def drive(runner: Any, schedule: Schedule, stop: Event) -> None:
    """Follow the schedule, as Locust's shape, until its `tick()` says the run is over
    (or Ctrl-C)."""
    shape = locust_shape(schedule)
    runner.environment.shape_class = shape
    shape.runner = runner
    shape.reset_time()
    last = None
    while not stop.is_set():
        now = shape.tick()
        if now is None:
            return
        if now != last:
            users, spawn_rate = now[0], now[1]
            runner.start(users, spawn_rate)
            last = now
        stop.wait(min(TICK_S, max(schedule.next_tick_s(), 0.01)))

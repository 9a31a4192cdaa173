"""Simulated runs shared by the labsim tests, each checked against Little's law.

Every scenario test gets its runs from `run`, which caches them (a run is a
pure function of its parameters and seed) and checks Little's law on each
before handing it over: L, the time-average number of calls in flight that
the simulation's own gauge measured, against lambda W from the call records.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from labsim import RunResult, littles_law, simulate
from labsim.study import scenarios

# Edge effects of a finite window (calls straddling its ends) stay well inside this.
LITTLES_LAW_TOLERANCE = 0.08


def assert_littles_law(result: RunResult, tolerance: float = LITTLES_LAW_TOLERANCE) -> None:
    """L = lambda W on one run, within `tolerance` (relative)."""
    law = littles_law(result)
    assert law.arrival_rate_per_s > 0
    assert law.relative_error < tolerance, (
        f"{result.architecture}: L = {law.mean_in_flight:.2f} calls in flight, "
        f"lambda W = {law.predicted_in_flight:.2f}"
    )


@cache
def _cached(scenario: str, architecture: str, seed: int, overrides: tuple) -> RunResult:
    result = simulate(scenarios.build(scenario, **dict(overrides)), architecture, seed)
    assert_littles_law(result)
    return result


def run(scenario: str, architecture: str, seed: int = 7, **overrides: Any) -> RunResult:
    """One run of a named scenario, checked against Little's law (cached)."""
    return _cached(scenario, architecture, seed, tuple(sorted(overrides.items())))

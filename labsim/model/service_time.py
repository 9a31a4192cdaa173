"""How long a worker is busy with one round: a distribution with a mean and a spread.

Its own module so that a tool (`labsim.model.tools`) and the workload
(`labsim.model.demand`) may both carry one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labsim.model.checks import check_numbers, require

SERVICE_TIME_KINDS = ("exponential", "deterministic", "lognormal")


@dataclass(frozen=True)
class ServiceTime:
    """How long a worker is busy with one request: a distribution with a mean.

    A barber's haircut takes twenty minutes on average, sometimes ten, sometimes
    forty. `exponential` is the memoryless case queueing theory assumes,
    `deterministic` the opposite extreme, `lognormal` what measured service
    times usually look like (its spread set by the coefficient of variation).
    """

    mean_s: float = 0.050  # assumption: a tool that parses, validates and calls an API client
    kind: str = "exponential"  # M/M/c, where queueing theory has closed forms
    cv: float = 1.0  # lognormal spread (std / mean); the exponential's own value

    def __post_init__(self) -> None:
        check_numbers(self, "mean_s", "cv")
        require(
            self.kind in SERVICE_TIME_KINDS,
            f"service time kind must be one of {', '.join(SERVICE_TIME_KINDS)}, got {self.kind!r}",
        )
        require(
            self.kind != "exponential" or math.isclose(self.cv, 1.0),
            f"an exponential service time has a cv of 1, got cv {self.cv:g}: choose "
            "lognormal for another spread",
        )

    def describe(self) -> str:
        """The distribution in words, as the plan prints it: `lognormal, mean 2.5 ms, cv 0.4`."""
        spread = {"exponential": ", cv 1", "deterministic": ""}.get(self.kind, f", cv {self.cv:g}")
        return f"{self.kind}, mean {self.mean_s * 1e3:.4g} ms{spread}"

"""A round's service time as a distribution: its mean, its spread and the kind that fits.

labsim takes the server work of a round as `exponential`, `lognormal` (with a coefficient
of variation) or `deterministic`. From round-by-round samples of the service time the kind
is the one whose fitted density gives the samples the highest likelihood (a spread under
`DETERMINISTIC_CV` is called deterministic: no density fits a near-constant well, and the
model's deterministic rounds are what it means).

Seen from outside a server, a round's latency is its service time plus the time on the
wire and in the client; the cheapest request the server answers (a ping) is mostly the
latter. With the two independent, the service's mean is the difference of the means and
its variance the difference of the variances (`from_outside`): no sample of the service
itself, so the kind follows from the spread alone (near 1: exponential).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

#: A spread (std / mean) below which a round's service is called deterministic.
DETERMINISTIC_CV = 0.1
#: How near 1 a spread known only by its moments must be to be called exponential.
EXPONENTIAL_BAND = 0.2


@dataclass(frozen=True)
class RoundFit:
    """A round's service time: mean (s), spread (std / mean), labsim's kind, and how it was
    found (`samples`: from samples of the service; `moments`: from latencies, by moments)."""

    mean_s: float
    cv: float
    kind: str
    method: str
    samples: int

    def as_round_cpu(self) -> dict[str, float | str]:
        """The parameter file's `round_cpu` (as labsim reads it: an exponential has cv 1)."""
        cv = (
            1.0
            if self.kind == "exponential"
            else (0.0 if self.kind == "deterministic" else self.cv)
        )
        return {"mean_s": float(f"{self.mean_s:.3g}"), "cv": round(cv, 3), "kind": self.kind}


def _lognormal_loglik(samples: list[float]) -> float:
    logs = [math.log(s) for s in samples]
    mu = statistics.fmean(logs)
    sigma = max(statistics.pstdev(logs), 1e-9)
    return sum(
        -math.log(s * sigma * math.sqrt(2 * math.pi)) - (math.log(s) - mu) ** 2 / (2 * sigma**2)
        for s in samples
    )


def _exponential_loglik(samples: list[float]) -> float:
    mean = statistics.fmean(samples)
    return sum(-math.log(mean) - s / mean for s in samples)


def from_samples(samples_s: list[float]) -> RoundFit:
    """The fit of service times measured one by one (each > 0)."""
    positive = [s for s in samples_s if s > 0]
    if len(positive) < 2:
        raise ValueError("at least two service times are needed for a spread")
    mean = statistics.fmean(positive)
    cv = statistics.stdev(positive) / mean
    if cv < DETERMINISTIC_CV:
        kind = "deterministic"
    elif _exponential_loglik(positive) > _lognormal_loglik(positive):
        kind = "exponential"
    else:
        kind = "lognormal"
    return RoundFit(mean, cv, kind, "samples", len(positive))


def kind_of(cv: float) -> str:
    """The kind a spread known only by its moments suggests."""
    if cv < DETERMINISTIC_CV:
        return "deterministic"
    return "exponential" if abs(cv - 1) <= EXPONENTIAL_BAND else "lognormal"


def from_outside(
    round_latencies_s: list[float], floor_latencies_s: list[float], mean_s: float | None = None
) -> RoundFit:
    """The fit of a round's service from its latencies and a floor request's (a ping): the
    mean difference and the variance difference. `mean_s`, when the server's own CPU count
    gave the mean, replaces the difference of the means."""
    if len(round_latencies_s) < 2 or len(floor_latencies_s) < 2:
        raise ValueError("at least two latencies of each are needed")
    outside = statistics.fmean(round_latencies_s) - statistics.fmean(floor_latencies_s)
    mean = mean_s if mean_s is not None else outside
    if not mean > 0:
        raise ValueError(
            f"a round takes no longer than the floor request ({outside * 1e3:.3f} ms more): "
            "its service cannot be told from the wire's"
        )
    variance = statistics.variance(round_latencies_s) - statistics.variance(floor_latencies_s)
    cv = math.sqrt(max(variance, 0.0)) / mean
    return RoundFit(mean, cv, kind_of(cv), "moments", len(round_latencies_s))

"""The calls a deployment receives: arrival times, tools, server CPU and think times.

A workload is drawn once, up front, from its own random streams, and then
replayed against each architecture: the same seed gives the same arrivals,
the same tools, the same CPU per round and the same user think times whatever
architecture serves them (common random numbers), so any difference in the
results is the architecture's.

Which tool a call is to is an index into `WorkloadParams.tools`; what each
tool asks, round by round, is in `labsim.model.tools`. A call's work per round is
drawn from the workload's `round_cpu`, or from its tool's own where the tool has one.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from labsim.model.demand import ServiceTime, WorkloadParams

# Draws kept per call: enough for the rounds and questions of a call whose
# questions change under it during an upgrade; later ones reuse the last draw.
DRAWS_PER_CALL = 6
#: The most calls one run may draw: a run keeps every call (about 2 KB each, measured on
#: 200,000 calls), so this is about 2 GB, past which a run would exhaust a small machine.
MAX_CALLS_PER_RUN = 1_000_000


def sample_service_times(
    service: ServiceTime, rng: np.random.Generator, size: int | tuple[int, ...]
) -> np.ndarray:
    """Draw service times (seconds) from a `ServiceTime` distribution."""
    if service.kind == "deterministic" or service.mean_s == 0:
        return np.full(size, float(service.mean_s))
    if service.kind == "exponential":
        return rng.exponential(service.mean_s, size)
    # A lognormal with the requested mean and coefficient of variation.
    sigma2 = math.log1p(service.cv**2)
    mu = math.log(service.mean_s) - sigma2 / 2
    return rng.lognormal(mu, math.sqrt(sigma2), size)


def arrival_times(
    rate_per_s: float,
    horizon_s: float,
    rng: np.random.Generator,
    pieces: list[tuple[float, float, float]] | None = None,
) -> np.ndarray:
    """Arrival instants of a Poisson process on [0, horizon_s), sorted.

    `pieces` are (start_s, end_s, multiplier) stretches during which the rate
    is multiplied; where pieces overlap their multipliers multiply. Each
    stretch of constant rate gets a Poisson number of arrivals placed
    uniformly, which is exactly a Poisson process.
    """
    cuts = {0.0, horizon_s}
    for start, end, _ in pieces or []:
        cuts.update(t for t in (start, end) if 0 < t < horizon_s)
    edges = sorted(cuts)
    times = []
    for lo, hi in itertools.pairwise(edges):
        factor = 1.0
        for start, end, multiplier in pieces or []:
            if start <= lo < end:
                factor *= multiplier
        count = rng.poisson(rate_per_s * factor * (hi - lo))
        times.append(rng.uniform(lo, hi, count))
    return np.sort(np.concatenate(times)) if times else np.empty(0)


@dataclass
class Workload:
    """Every call of one run, drawn in advance: when, which tool, CPU and think times.

    `session[i]` numbers the user session call i belongs to; `cpu_s[i, r]` is
    the tool's own CPU for round r of call i; `think_s[i, q]` is how long the
    user takes over the q-th question asked in call i (`inf` once the user has
    walked away).
    """

    arrival_s: np.ndarray
    tool: np.ndarray
    session: np.ndarray
    cpu_s: np.ndarray
    think_s: np.ndarray
    #: A uniform draw per call in [0, 1): whether a call to a tool of a mean number of
    #: rounds stops one round short (`labsim.model.tools.SimTool.for_call`).
    path: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.arrival_s)


def draw_workload(
    params: WorkloadParams,
    horizon_s: float,
    seed: int | np.random.SeedSequence,
    extra_pieces: list[tuple[float, float, float]] | None = None,
) -> Workload:
    """Draw the calls arriving in [0, horizon_s) from independent random streams."""
    if not isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(seed)
    streams = [np.random.default_rng(s) for s in seed.spawn(5)]
    arrivals_rng, tools_rng, cpu_rng, think_rng, session_rng = streams
    pieces = rate_pieces(params, horizon_s, extra_pieces)
    arrivals = arrival_times(params.arrival_rate_per_s, horizon_s, arrivals_rng, pieces)
    n = len(arrivals)
    tool = tools_rng.choice(len(params.tools), size=n, p=np.asarray(params.tool_mix, dtype=float))
    cpu = sample_service_times(params.round_cpu, cpu_rng, (n, DRAWS_PER_CALL))
    think = think_rng.lognormal(
        math.log(params.think_time_median_s), params.think_time_sigma, (n, DRAWS_PER_CALL)
    )
    think *= params.think_scale
    walked_away = think_rng.random((n, DRAWS_PER_CALL)) < params.never_answer_share
    # A user who walks away does not come back for the next question either.
    walked_away = np.logical_or.accumulate(walked_away, axis=1)
    think[walked_away] = np.inf
    session = assign_sessions(arrivals, params.calls_per_session, params.session_s, session_rng)
    # Streams of their own, spawned after the others so that those stay what they were: the
    # rounds a call to a tool of a mean number of rounds takes, and the work of each tool
    # that has its own.
    path_rng, *tool_rngs = (np.random.default_rng(s) for s in seed.spawn(1 + len(params.tools)))
    path = path_rng.random(n)
    for k, spec in enumerate(params.specs()):
        if spec.round_cpu is not None:
            calls = tool == k
            cpu[calls] = sample_service_times(
                spec.round_cpu, tool_rngs[k], (int(calls.sum()), DRAWS_PER_CALL)
            )
    return Workload(
        arrival_s=arrivals, tool=tool, session=session, cpu_s=cpu, think_s=think, path=path
    )


def rate_pieces(
    params: WorkloadParams,
    horizon_s: float,
    extra_pieces: list[tuple[float, float, float]] | None = None,
) -> list[tuple[float, float, float]]:
    """The (start_s, end_s, multiplier) stretches of the arrival rate: the rate profile's
    steps, then those the faults add."""
    pieces = []
    profile = list(params.rate_profile)
    for k, (start, multiplier) in enumerate(profile):
        end = profile[k + 1][0] if k + 1 < len(profile) else horizon_s
        pieces.append((start, end, multiplier))
    return pieces + list(extra_pieces or [])


def expected_calls(
    params: WorkloadParams,
    horizon_s: float,
    extra_pieces: list[tuple[float, float, float]] | None = None,
) -> float:
    """How many calls a run of `horizon_s` draws on average, before drawing any."""
    pieces = rate_pieces(params, horizon_s, extra_pieces)
    cuts = sorted({0.0, horizon_s, *(t for p in pieces for t in p[:2] if 0 < t < horizon_s)})
    total = 0.0
    for lo, hi in itertools.pairwise(cuts):
        factor = math.prod(m for start, end, m in pieces if start <= lo < end)
        total += params.arrival_rate_per_s * factor * (hi - lo)
    return total


def assign_sessions(
    arrival_s: np.ndarray, calls_per_session: float, session_s: float, rng: np.random.Generator
) -> np.ndarray:
    """Number the session of each call: about `calls_per_session` calls per session.

    A call opens a new session with probability 1 / `calls_per_session`;
    otherwise it belongs to a session opened in the last `session_s` seconds,
    drawn at random (or opens one if there is none).
    """
    n = len(arrival_s)
    if calls_per_session <= 1:
        return np.arange(n)
    opens = rng.random(n) < 1 / calls_per_session
    picks = rng.random(n)
    session = np.empty(n, dtype=np.int64)
    opened_at: list[float] = []  # opening time of session k
    oldest = 0  # first session still open
    for i, (t, new, pick) in enumerate(zip(arrival_s.tolist(), opens, picks, strict=True)):
        while oldest < len(opened_at) and opened_at[oldest] < t - session_s:
            oldest += 1
        if new or oldest == len(opened_at):
            session[i] = len(opened_at)
            opened_at.append(t)
        else:
            session[i] = oldest + int(pick * (len(opened_at) - oldest))
    return session

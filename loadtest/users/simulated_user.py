"""The simulated user: what arguments a call carries, how each question is answered, and
how long the user thinks before answering.
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable
from typing import Any

from loadtest.users.tool_shape import shape_of
from server.tools.crunch import crunch_start, crunch_units
from server.tools.quote import QUOTE_MAX_CPU_MS

Sleep = Callable[[float], None]

Answerer = Callable[[str, dict[str, Any], random.Random], dict[str, Any]]
"""How a user answers one input request: given the question's key (an MRTR
`inputRequests` key, or a legacy question's message), the request and the user's seeded
random generator, the answer's result."""

#: Share of users who resolve a work item as a duplicate, so that `update_work_item`
#: asks its second question (`duplicate_of`).
DUPLICATE_SHARE = 0.5


def tool_arguments(
    tool: str,
    rng: random.Random,
    crunch_units: int = 0,
    provision_s: float = 2.0,
    cpu_ms_per_round: float = 0.0,
    argument_bytes: int = 0,
) -> dict[str, Any]:
    """Arguments for a demo tool, as a varied user population would send them; with
    `argument_bytes`, its text argument padded to about that size (a document sent along).

    `cpu_ms_per_round` is the CPU of each round of `quote` and of a shape of `rounds`
    (`rounds/3x2`), within the tools' cap: a draw from a long tail beyond it is the cap.
    """
    shape = shape_of(tool)
    if shape is not None:
        return shape.arguments(min(cpu_ms_per_round, QUOTE_MAX_CPU_MS))
    if tool == "get_weather":
        return _padded(
            {"location": rng.choice(["Paris", "Lagos", "Lima", "Oslo", "Pune"])}, argument_bytes
        )
    if tool == "update_work_item":
        return {"workItemId": rng.randint(1, 9999), "fields": {"System.State": "Resolved"}}
    if tool == "ask_capital":
        country = rng.choice(["France", "Peru", "Japan", "Kenya"])
        return _padded({"country": country}, argument_bytes)
    if tool == "crunch":
        return {"units": crunch_units}
    if tool == "quote":
        return {"cpu_ms": cpu_ms_per_round}
    if tool == "provision_vm":
        return {"name": f"vm-{rng.randint(1, 99999)}", "seconds": provision_s}
    return {}


def _padded(arguments: dict[str, str], size_bytes: int) -> dict[str, str]:
    """`arguments` with its one text value followed by spaces up to `size_bytes`."""
    if size_bytes <= 0:
        return arguments
    ((name, value),) = arguments.items()
    return {name: value + " " * max(0, size_bytes - len(value))}


def answer_for(request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A simulated user's (or LLM's, or client's) answer to one input request."""
    method = request.get("method")
    params = request.get("params") or {}
    if method == "sampling/createMessage":
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "swarm-model",
            "stopReason": "endTurn",
        }
    if method == "roots/list":
        return {"roots": [{"uri": "file:///work", "name": "work"}]}
    content: dict[str, Any] = {}
    for name, spec in (params.get("requestedSchema") or {}).get("properties", {}).items():
        if "enum" in spec:
            options = spec["enum"]
            if not (isinstance(options, list) and options):
                return {"action": "decline"}  # a choice among nothing: the user cannot answer
            # Some users mark duplicates, so update_work_item takes its second round.
            content[name] = "Duplicate" if rng.random() < DUPLICATE_SHARE else options[0]
        elif spec.get("type") in ("number", "integer"):
            content[name] = rng.randint(1, 9999)
        elif spec.get("type") == "boolean":
            content[name] = True
        else:
            content[name] = f"user{rng.randint(1, 999)}"
    return {"action": "accept", "content": content}


def lab_answer(key: str, request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The answers the lab's own demo tools expect (`answer_for`), whatever the question's key."""
    return answer_for(request, rng)


def tool_cpu_ms(mean_ms: float, cv: float, kind: str, rng: random.Random) -> float:
    """The CPU one call of a CPU-bound tool spends per round: `mean_ms` on the mean, drawn
    as `kind` (deterministic, exponential, or lognormal with spread `cv`)."""
    if mean_ms <= 0 or kind == "deterministic" or (kind == "lognormal" and cv <= 0):
        return mean_ms
    if kind == "exponential":
        return rng.expovariate(1 / mean_ms)
    sigma = math.sqrt(math.log1p(cv * cv))
    return mean_ms * rng.lognormvariate(-sigma * sigma / 2, sigma)


#: Units timed once to learn how fast this machine hashes the crunch chain.
_TIMED_UNITS = 20_000


@functools.cache
def crunch_units_per_ms() -> float:
    """How many crunch units one millisecond of CPU hashes here (timed once, in CPU time,
    the best of three: a replica runs the same chain on the same machine)."""
    best_s = math.inf
    for _ in range(3):
        started = time.process_time()
        crunch_units(crunch_start(), 0, _TIMED_UNITS)
        best_s = min(best_s, time.process_time() - started)
    return _TIMED_UNITS / max(best_s * 1e3, 1e-3)


def crunch_units_for(cpu_ms: float) -> int:
    """The crunch units that take about `cpu_ms` of CPU on this machine."""
    return max(0, round(cpu_ms * crunch_units_per_ms()))


class ThinkTime:
    """How long a user takes to answer: lognormal, heavy-tailed, scaled down for a laptop;
    a share `never_answer_share` of calls are never answered at all."""

    def __init__(
        self, median_s: float, sigma: float, rng: random.Random, never_answer_share: float = 0.0
    ) -> None:
        self.median_s = median_s
        self.sigma = sigma
        self.rng = rng
        self.never_answer_share = never_answer_share

    def never_answers(self) -> bool:
        """Whether the user of the call starting now will never answer (drawn per call)."""
        return self.never_answer_share > 0 and self.rng.random() < self.never_answer_share

    def draw(self) -> float:
        if self.median_s <= 0:
            return 0.0
        return self.median_s * self.rng.lognormvariate(0.0, self.sigma)


def think_for(pause_s: float, sleep: Sleep) -> float:
    """Let the user think; returns the time that actually passed.

    That, not the planned pause, is what comes off the latency: a busy load generator
    wakes its users late, and the delay is the generator's, not the server's.
    """
    started = time.perf_counter()
    sleep(pause_s)
    return time.perf_counter() - started

"""The simulated user: what arguments a call carries, how each question is answered, and
how long the user thinks before answering.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

Sleep = Callable[[float], None]

#: Share of users who resolve a work item as a duplicate, so that `update_work_item`
#: asks its second question (`duplicate_of`).
DUPLICATE_SHARE = 0.5


def tool_arguments(
    tool: str,
    rng: random.Random,
    crunch_units: int = 0,
    provision_s: float = 2.0,
    quote_cpu_ms: float = 0.0,
) -> dict[str, Any]:
    """Arguments for a demo tool, as a varied user population would send them."""
    if tool == "get_weather":
        return {"location": rng.choice(["Paris", "Lagos", "Lima", "Oslo", "Pune"])}
    if tool == "update_work_item":
        return {"workItemId": rng.randint(1, 9999), "fields": {"System.State": "Resolved"}}
    if tool == "ask_capital":
        return {"country": rng.choice(["France", "Peru", "Japan", "Kenya"])}
    if tool == "crunch":
        return {"units": crunch_units}
    if tool == "quote":
        return {"cpu_ms": quote_cpu_ms}
    if tool == "provision_vm":
        return {"name": f"vm-{rng.randint(1, 99999)}", "seconds": provision_s}
    return {}


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
            # Some users mark duplicates, so update_work_item takes its second round.
            content[name] = "Duplicate" if rng.random() < DUPLICATE_SHARE else spec["enum"][0]
        elif spec.get("type") in ("number", "integer"):
            content[name] = rng.randint(1, 9999)
        elif spec.get("type") == "boolean":
            content[name] = True
        else:
            content[name] = f"user{rng.randint(1, 999)}"
    return {"action": "accept", "content": content}


class ThinkTime:
    """How long a user takes to answer: lognormal, heavy-tailed, scaled down for a laptop."""

    def __init__(self, median_s: float, sigma: float, rng: random.Random) -> None:
        self.median_s = median_s
        self.sigma = sigma
        self.rng = rng

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

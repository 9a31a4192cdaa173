"""How long each replica drained in a rolling upgrade: notebook 03's measure of what a
draining replica still holds, and the test that checks its claims at other seeds."""

from __future__ import annotations

import labsim


def drain_times_s(run: labsim.RunResult, replicas: int) -> list[float]:
    """Each replica's drain in `run`: from its `draining` event to its `down`, in seconds."""
    events = run.events.set_index(["replica", "kind"])["time_s"]
    return [
        float(events[(replica, "down")] - events[(replica, "draining")])
        for replica in range(replicas)
    ]

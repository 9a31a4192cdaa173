"""A fleet that changes size: a target-tracking autoscaler, as ECS and the Kubernetes HPA run it.

Every evaluation period the scaler reads a metric over the replicas that are
up (their CPU utilisation over the period, or the requests in flight per
replica, held SSE streams included) and asks for
`ceil(replicas x metric / target)` replicas, within `[min_replicas,
max_replicas]`. A scale-out launches replicas that are billed at once and take
traffic after `startup_s`; a scale-in picks the newest replicas, takes them
out of rotation and stops them once they hold nothing, or cuts what they still
hold after `drain_timeout_s`. Each direction waits its cooldown after the last
change.

Under MRTR a replica holds nothing between rounds, so a scale-in is over as
soon as its requests in progress end. Under the legacy protocol a replica holds
every call whose user is thinking, so it drains for as long as they think, or
cuts them; behind a sticky balancer a new replica only gets new sessions, as
every existing session keeps its cookie.

The scaler also samples every replica each period (`replica_samples` of the
run: state, share of the CPU work, held calls, connections), for the
timelines of the `autoscale` scenario.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import simpy

from labsim.cluster import ReplicaState
from labsim.faults import Fault
from labsim.params import ParameterError, SimParams

if TYPE_CHECKING:
    from labsim.cluster import Replica
    from labsim.simulation import Simulation

METRICS = ("cpu", "in-flight")


@dataclass(frozen=True)
class Autoscaler(Fault):
    """Target tracking on CPU utilisation or requests in flight per replica."""

    at_s: float = 0.0  # scaling is on from the start
    metric: str = "cpu"  # ECS's ECSServiceAverageCPUUtilization; "in-flight": per replica
    target: float = 0.5  # assumption: half the CPU, room for a burst while replicas start
    min_replicas: int = 2  # assumption: two, so one failure leaves one serving
    max_replicas: int = 20  # assumption
    period_s: float = 15.0  # Kubernetes HPA sync period default (15 s)
    scale_out_cooldown_s: float = 60.0  # assumption: one minute between scale-outs
    scale_in_cooldown_s: float = 300.0  # Kubernetes HPA scale-down stabilisation default
    startup_s: float = 30.0  # assumption: container start plus a readiness probe
    drain_timeout_s: float = 30.0  # Kubernetes terminationGracePeriodSeconds default

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.metric not in METRICS:
            raise ParameterError(f"metric must be one of {', '.join(METRICS)}, got {self.metric!r}")
        for name in ("target", "period_s"):
            if not getattr(self, name) > 0:
                raise ParameterError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("scale_out_cooldown_s", "scale_in_cooldown_s", "startup_s"):
            if getattr(self, name) < 0:
                raise ParameterError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ParameterError("need 1 <= min_replicas <= max_replicas")

    def check(self, params: SimParams) -> None:
        if not self.min_replicas <= params.cluster.replicas <= self.max_replicas:
            raise ParameterError(
                f"the fleet starts with {params.cluster.replicas} replicas, outside "
                f"[{self.min_replicas}, {self.max_replicas}]"
            )

    def run(self, sim: Simulation) -> Generator[simpy.Event, object, None]:
        env, cluster = sim.env, sim.cluster
        workers = sim.params.cluster.workers_per_replica
        held_call_bytes = sim.params.cluster.held_call_bytes
        samples = sim.recorder.replica_samples
        last_change_s = -math.inf
        last_worked = {r.index: r.worked_s for r in cluster.replicas}
        yield env.timeout(self.at_s)
        while env.now < sim.params.horizon_s:
            yield env.timeout(self.period_s)
            now = env.now
            worked = {r.index: r.worked_s - last_worked.get(r.index, 0.0) for r in cluster.replicas}
            last_worked = {r.index: r.worked_s for r in cluster.replicas}
            total_worked = sum(worked.values()) or 1.0
            for r in cluster.replicas:
                if r.state is not ReplicaState.DOWN:
                    samples.append(
                        (
                            now,
                            r.index,
                            r.state.value,
                            worked[r.index] / total_worked,
                            worked[r.index] / (workers * self.period_s),
                            r.held,
                            r.held * held_call_bytes,
                            r.connections,
                        )
                    )
            up = [r for r in cluster.replicas if r.state is ReplicaState.UP]
            if not up:
                continue
            if self.metric == "cpu":
                value = sum(worked[r.index] for r in up) / (workers * self.period_s * len(up))
            else:
                value = sum(r.connections for r in up) / len(up)
            # The fleet the scaler counts: replicas up or starting (a draining one is leaving).
            fleet = [
                r for r in cluster.replicas if r.state in (ReplicaState.UP, ReplicaState.STARTING)
            ]
            desired = math.ceil(len(up) * value / self.target - 1e-9)
            desired = min(self.max_replicas, max(self.min_replicas, desired))
            if desired > len(fleet) and now - last_change_s >= self.scale_out_cooldown_s:
                last_change_s = now
                sim.recorder.event(now, "scale-out", None, f"{len(fleet)} -> {desired}")
                for _ in range(desired - len(fleet)):
                    env.process(self._start(sim, cluster.launch(cluster.params.tool_version)))
            elif desired < len(fleet) and now - last_change_s >= self.scale_in_cooldown_s:
                last_change_s = now
                sim.recorder.event(now, "scale-in", None, f"{len(fleet)} -> {desired}")
                newest_first = sorted(fleet, key=lambda r: r.index, reverse=True)
                for replica in newest_first[: len(fleet) - desired]:
                    env.process(self._stop(sim, replica))

    def _start(self, sim: Simulation, replica: Replica) -> Generator[simpy.Event, object, None]:
        yield sim.env.timeout(self.startup_s)
        if replica.state is ReplicaState.STARTING:
            sim.cluster.set_state(replica, ReplicaState.UP, "ready")

    def _stop(self, sim: Simulation, replica: Replica) -> Generator[simpy.Event, object, None]:
        yield from sim.cluster.drain(replica, self.drain_timeout_s, "scale-in")


def diurnal_profile(
    period_s: float, low: float, high: float, steps: int = 24, start_s: float = 0.0
) -> tuple[tuple[float, float], ...]:
    """A day of load as `rate_profile` steps: a cosine from `low` (at the start) to `high`."""
    pieces = []
    for k in range(steps):
        phase = (k + 0.5) / steps
        multiplier = low + (high - low) * (1 - math.cos(2 * math.pi * phase)) / 2
        pieces.append((start_s + k * period_s / steps, multiplier))
    return tuple(pieces)

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

from labsim.model.checks import ParameterError, check_numbers
from labsim.model.cluster import ReplicaState

if TYPE_CHECKING:
    from labsim.model.cluster import Replica
    from labsim.model.faults import World
    from labsim.model.params import SimParams

METRICS = ("cpu", "in-flight")


@dataclass(frozen=True)
class Autoscaler:
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
        check_numbers(self, "at_s")
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
        """Raise `ParameterError` unless the fleet starts within [min, max] replicas."""
        if not self.min_replicas <= params.cluster.replicas <= self.max_replicas:
            raise ParameterError(
                f"the fleet starts with {params.cluster.replicas} replicas, outside "
                f"[{self.min_replicas}, {self.max_replicas}]"
            )

    def run(self, world: World) -> Generator[simpy.Event, object, None]:
        """Every period: sample the replicas, read the metric, and scale out or in."""
        env, cluster = world.env, world.cluster
        last_change_s = -math.inf
        last_worked = {r.index: r.worked_s for r in cluster.replicas}
        yield env.timeout(self.at_s)
        while env.now < world.params.horizon_s:
            yield env.timeout(self.period_s)
            now = env.now
            worked = {r.index: r.worked_s - last_worked.get(r.index, 0.0) for r in cluster.replicas}
            last_worked = {r.index: r.worked_s for r in cluster.replicas}
            self._sample(world, worked)
            up = [r for r in cluster.replicas if r.state is ReplicaState.UP]
            if not up:
                continue
            # The fleet the scaler counts: replicas up or starting (a draining one is leaving).
            fleet = [
                r for r in cluster.replicas if r.state in (ReplicaState.UP, ReplicaState.STARTING)
            ]
            desired = self._desired(world, up, worked)
            if desired > len(fleet) and now - last_change_s >= self.scale_out_cooldown_s:
                last_change_s = now
                self._scale_out(world, len(fleet), desired)
            elif desired < len(fleet) and now - last_change_s >= self.scale_in_cooldown_s:
                last_change_s = now
                self._scale_in(world, fleet, desired)

    def _sample(self, world: World, worked: dict[int, float]) -> None:
        """Note each replica that is not down: state, CPU share and use, held calls."""
        workers = world.params.cluster.workers_per_replica
        held_call_bytes = world.params.cluster.held_call_bytes
        total_worked = sum(worked.values()) or 1.0
        now = world.env.now
        for r in world.cluster.replicas:
            if r.state is not ReplicaState.DOWN:
                world.recorder.replica_samples.append(
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

    def _desired(self, world: World, up: list[Replica], worked: dict[int, float]) -> int:
        """The fleet target tracking asks for: replicas x metric / target, within bounds."""
        if self.metric == "cpu":
            workers = world.params.cluster.workers_per_replica
            value = sum(worked[r.index] for r in up) / (workers * self.period_s * len(up))
        else:
            value = sum(r.connections for r in up) / len(up)
        desired = math.ceil(len(up) * value / self.target - 1e-9)
        return min(self.max_replicas, max(self.min_replicas, desired))

    def _scale_out(self, world: World, fleet: int, desired: int) -> None:
        """Launch replicas up to `desired`; each takes traffic once started."""
        cluster = world.cluster
        world.recorder.event(world.env.now, "scale-out", None, f"{fleet} -> {desired}")
        for _ in range(desired - fleet):
            world.env.process(self._start(world, cluster.launch(cluster.params.tool_version)))

    def _scale_in(self, world: World, fleet: list[Replica], desired: int) -> None:
        """Drain and stop the newest replicas down to `desired`."""
        world.recorder.event(world.env.now, "scale-in", None, f"{len(fleet)} -> {desired}")
        newest_first = sorted(fleet, key=lambda r: r.index, reverse=True)
        for replica in newest_first[: len(fleet) - desired]:
            world.env.process(self._stop(world, replica))

    def _start(self, world: World, replica: Replica) -> Generator[simpy.Event, object, None]:
        yield world.env.timeout(self.startup_s)
        if replica.state is ReplicaState.STARTING:
            world.cluster.set_state(replica, ReplicaState.UP, "ready")

    def _stop(self, world: World, replica: Replica) -> Generator[simpy.Event, object, None]:
        yield from world.cluster.drain(replica, self.drain_timeout_s, "scale-in")


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

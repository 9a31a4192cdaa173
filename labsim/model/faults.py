"""Faults injected into a run: a crash, a store outage, a rolling upgrade, a load spike.

Each fault is a frozen dataclass of its parameters and a SimPy process
(`run`) that acts on the simulated cluster at its time, noting what it did in
the run's event list so that plots can mark it. A load spike acts on the
arrivals instead (`arrival_pieces`), since the workload is drawn up front.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import simpy

from labsim.model.checks import ParameterError, check_numbers
from labsim.model.cluster import ReplicaState

if TYPE_CHECKING:
    from labsim.model.cluster import Cluster
    from labsim.model.metrics import Recorder
    from labsim.model.params import SimParams
    from labsim.model.store import SharedStore


class World(Protocol):
    """The running deployment a fault acts on: its clock, parameters, cluster, store and
    the notebook where it writes what it did (`labsim.model.simulation.Simulation`)."""

    env: simpy.Environment
    params: SimParams
    cluster: Cluster
    store: SharedStore
    recorder: Recorder
    upgrade_duration_s: float  # how long the last rolling upgrade took (NaN: none ran)


@dataclass(frozen=True)
class Fault:
    """Something that happens to the deployment at a given time."""

    at_s: float = 450.0  # assumption: halfway through the measurement window

    def __post_init__(self) -> None:
        check_numbers(self, "at_s")

    def check(self, params: SimParams) -> None:
        """Raise `ParameterError` if the fault does not fit the deployment."""

    def arrival_pieces(self) -> list[tuple[float, float, float]]:
        """(start_s, end_s, multiplier) changes this fault makes to the arrival rate."""
        return []

    def run(self, world: World) -> Generator[simpy.Event, object, None]:
        """The fault as a SimPy process acting on `world`."""
        yield from ()


@dataclass(frozen=True)
class ReplicaCrash(Fault):
    """A replica dies (an OOM kill, a lost node); its orchestrator restarts it.

    Everything attached to it is cut at once: under the legacy protocol every
    call it holds, under MRTR only the requests it is working on.
    """

    replica: int = 0  # which replica dies
    restart_s: float = 30.0  # assumption: container restart plus readiness probe

    def __post_init__(self) -> None:
        super().__post_init__()
        check_numbers(self, "restart_s", "replica")

    def check(self, params: SimParams) -> None:
        if self.replica >= params.cluster.replicas:
            raise ParameterError(
                f"crash of replica {self.replica}, but there are only {params.cluster.replicas}"
            )

    def run(self, world: World) -> Generator[simpy.Event, object, None]:
        env, cluster = world.env, world.cluster
        yield env.timeout(self.at_s)
        replica = cluster.replicas[self.replica]
        cluster.set_state(replica, ReplicaState.DOWN, "crash")
        cut = replica.cut("crash")
        world.recorder.event(env.now, "cut", replica.index, f"{cut} calls attached")
        yield env.timeout(self.restart_s)
        cluster.set_state(replica, ReplicaState.UP, "restarted")


@dataclass(frozen=True)
class StoreOutage(Fault):
    """The shared store is unreachable for a while (a failover, a network partition)."""

    duration_s: float = 60.0  # assumption: a managed-Redis failover takes about a minute

    def __post_init__(self) -> None:
        super().__post_init__()
        check_numbers(self, "duration_s")

    def run(self, world: World) -> Generator[simpy.Event, object, None]:
        yield world.env.timeout(self.at_s)
        world.store.set_up(False, "outage")
        yield world.env.timeout(self.duration_s)
        world.store.set_up(True, "recovered")


@dataclass(frozen=True)
class RollingUpgrade(Fault):
    """Every replica in turn drains, stops, and restarts with the new tool version.

    Draining takes a replica out of rotation for new calls (requests pinned by
    a cookie still reach it); once nothing is attached, or when the drain
    timeout passes, whatever is left is cut and the replica restarts. The new
    version asks microsoft_login where the old one asked google_login.
    """

    at_s: float = 400.0  # assumption: early in the window, so the whole upgrade fits
    drain_timeout_s: float = 30.0  # Kubernetes terminationGracePeriodSeconds default
    restart_s: float = 15.0  # assumption: container start plus a readiness probe period
    new_version: int = 2  # the seed's new tool version

    def __post_init__(self) -> None:
        super().__post_init__()
        check_numbers(self, "drain_timeout_s", "restart_s")
        if self.new_version not in (1, 2):
            raise ParameterError(f"new_version must be 1 or 2, got {self.new_version!r}")

    def run(self, world: World) -> Generator[simpy.Event, object, None]:
        env, cluster = world.env, world.cluster
        yield env.timeout(self.at_s)
        started = env.now
        world.recorder.event(started, "upgrade-start", None, f"to v{self.new_version}")
        for replica in cluster.replicas:
            yield from cluster.drain(
                replica, self.drain_timeout_s, f"upgrade from v{replica.version}"
            )
            yield env.timeout(self.restart_s)
            replica.version = self.new_version
            cluster.set_state(replica, ReplicaState.UP, f"v{self.new_version}")
        world.upgrade_duration_s = env.now - started
        world.recorder.event(env.now, "upgrade-end", None, f"{world.upgrade_duration_s:.0f} s")


@dataclass(frozen=True)
class LoadSpike(Fault):
    """Arrivals jump above capacity for a while (a launch, a retry storm, a viral prompt)."""

    duration_s: float = 60.0  # assumption: a one-minute burst
    factor: float = 15.0  # assumption: 15x the base rate, about 1.3x the default capacity

    def __post_init__(self) -> None:
        super().__post_init__()
        check_numbers(self, "duration_s", "factor")

    def arrival_pieces(self) -> list[tuple[float, float, float]]:
        return [(self.at_s, self.at_s + self.duration_s, self.factor)]

    def run(self, world: World) -> Generator[simpy.Event, object, None]:
        yield world.env.timeout(self.at_s)
        world.recorder.event(world.env.now, "spike-start", None, f"x{self.factor:g}")
        yield world.env.timeout(self.duration_s)
        world.recorder.event(world.env.now, "spike-end")

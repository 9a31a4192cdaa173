"""The replicas behind the load balancer: worker slots, connections, memory, state, version.

A replica is a server process the way a bank branch has tellers: a fixed
number of workers (CPU slots, `labsim.model.workers`) serve requests one at a
time each, and a queue forms when all are busy. Besides the workers a replica
holds open connections (an SSE stream stays open as long as its call), memory
for calls that wait on a user, and a set of the calls it is serving, which a
crash or the end of a drain cuts.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Generator
from typing import TYPE_CHECKING

import simpy

from labsim.model.balancers import Balancer, make_balancer
from labsim.model.deployment import ClusterParams
from labsim.model.metrics import Gauge, Recorder
from labsim.model.workers import WorkerPool

if TYPE_CHECKING:
    from simpy.events import Process


class ReplicaState(enum.Enum):
    """Where a replica is in its life: starting, serving, draining before a stop, or down."""

    STARTING = "starting"
    UP = "up"
    DRAINING = "draining"
    DOWN = "down"


class Replica:
    """One server process: workers, open connections, memory held, state and tool version."""

    __slots__ = (
        "_drained",
        "attached",
        "busy_s",
        "connections",
        "count_from_s",
        "env",
        "held",
        "index",
        "peak_connections",
        "peak_held",
        "state",
        "version",
        "worked_s",
        "workers",
    )

    def __init__(
        self,
        env: simpy.Environment,
        index: int,
        workers: int,
        version: int,
        count_from_s: float = 0.0,
    ) -> None:
        self.env = env
        self.index = index
        self.workers = WorkerPool(env, workers)
        self.connections = 0
        # Calls whose memory this replica keeps while their user thinks, and the peaks of
        # that and of open connections from `count_from_s` on (the end of the warm-up).
        self.held = 0
        self.peak_held = 0
        self.peak_connections = 0
        self.count_from_s = count_from_s
        self.busy_s = 0.0  # worker-seconds inside the measurement window
        self.worked_s = 0.0  # worker-seconds since the start, for an autoscaler's metric
        self.state = ReplicaState.UP
        self.version = version
        # The call processes this replica is serving or holding; a crash cuts them all, in
        # the order they attached (a dict: a set's order follows memory addresses, and the
        # same seed would not give the same run).
        self.attached: dict[Process, None] = {}
        self._drained: simpy.Event | None = None

    def connect(self) -> None:
        """A connection opens: a request in progress, or a held SSE stream."""
        n = self.connections + 1
        self.connections = n
        if n > self.peak_connections and self.env.now >= self.count_from_s:
            self.peak_connections = n

    def disconnect(self) -> None:
        """A connection closes."""
        self.connections -= 1

    def hold(self, delta: int) -> None:
        """Start (+1) or stop (-1) keeping a waiting call's memory."""
        n = self.held + delta
        self.held = n
        if n > self.peak_held and self.env.now >= self.count_from_s:
            self.peak_held = n

    def accepts_cookie(self) -> bool:
        """Whether a request pinned here by a cookie still reaches this replica (up or draining)."""
        return self.state is ReplicaState.UP or self.state is ReplicaState.DRAINING

    def attach(self, process: Process) -> None:
        """Start serving (or holding) a call: it shares this replica's fate."""
        self.attached[process] = None

    def detach(self, process: Process) -> None:
        """Stop serving a call; the last call out of a draining replica ends the drain."""
        self.attached.pop(process, None)
        if self._drained is not None and not self.attached:
            self._drained.succeed()
            self._drained = None

    def drained(self) -> simpy.Event:
        """An event that fires once no call is attached to this replica."""
        event = self.env.event()
        if self.attached:
            self._drained = event
        else:
            event.succeed()
        return event

    def cut(self, cause: str) -> int:
        """Interrupt every attached call (crash, end of drain); returns how many were cut."""
        victims = list(self.attached)
        self.attached.clear()
        for process in victims:
            if process.is_alive:
                process.interrupt(cause)
        drained, self._drained = self._drained, None
        if drained is not None:
            drained.succeed()
        return len(victims)


class Cluster:
    """N replicas behind one load balancer, with the gauges the metrics read.

    `routable` lists the replicas that take new work (up, not draining or
    down); the balancer picks among them.
    """

    def __init__(
        self,
        env: simpy.Environment,
        params: ClusterParams,
        rng: random.Random,
        recorder: Recorder,
        window: tuple[float, float],
        sticky: bool,
    ) -> None:
        self.env = env
        self.params = params
        self.recorder = recorder
        self.replicas = [
            Replica(env, k, params.workers_per_replica, params.tool_version, window[0])
            for k in range(params.replicas)
        ]
        self.routable: list[Replica] = list(self.replicas)
        self.balancer: Balancer = make_balancer(params.lb_policy, rng, sticky=sticky)
        t0, t1 = window
        self.in_flight = Gauge(t0, t1)  # calls arrived and not yet ended
        self.held = Gauge(t0, t1)  # calls whose replica keeps memory while the user thinks
        self.streams = Gauge(t0, t1)  # open SSE streams
        self.billed = Gauge(t0, t1)  # replicas running (billed), up or draining
        self.billed.move(0.0, params.replicas)

    def route(self, call: object | None = None) -> Replica | None:
        """The replica the load balancer sends a request of `call` to (None if none is up)."""
        return self.balancer.route(self.routable, call)

    def set_state(self, replica: Replica, state: ReplicaState, detail: str = "") -> None:
        """Move a replica to a new state, updating routing and billing, and note the event."""
        previous = replica.state
        if previous is state:
            return
        replica.state = state
        self.routable = [r for r in self.replicas if r.state is ReplicaState.UP]
        now = self.env.now
        if state is ReplicaState.DOWN:
            self.billed.move(now, -1)
        elif previous is ReplicaState.DOWN:
            self.billed.move(now, +1)
        self.recorder.event(now, state.value, replica.index, detail)

    def drain(
        self, replica: Replica, timeout_s: float, why: str
    ) -> Generator[simpy.Event, object, None]:
        """Take `replica` out of rotation, wait until it holds nothing or `timeout_s` passes,
        cut whatever it still holds, and stop it."""
        env = self.env
        self.set_state(replica, ReplicaState.DRAINING, why)
        drained = replica.drained()
        yield drained | env.timeout(timeout_s)
        if not drained.triggered:
            cut = replica.cut(why)
            self.recorder.event(env.now, "cut", replica.index, f"{cut} calls at drain timeout")
        self.set_state(replica, ReplicaState.DOWN, f"stopped: {why}")

    def launch(self, version: int) -> Replica:
        """A new replica, billed from now and starting (not routable until `UP`)."""
        replica = Replica(
            self.env, len(self.replicas), self.params.workers_per_replica, version, self.billed.t0
        )
        replica.state = ReplicaState.DOWN
        self.replicas.append(replica)
        self.set_state(replica, ReplicaState.STARTING, f"v{version}")
        return replica

    def busy_workers(self) -> int:
        """Workers serving a request right now, across the cluster."""
        return sum(r.workers.count for r in self.replicas)

    def queued_requests(self) -> int:
        """Requests waiting for a worker right now, across the cluster."""
        return sum(len(r.workers.queue) for r in self.replicas)

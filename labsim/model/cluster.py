"""The replicas behind the load balancer: worker slots, connections, memory, state, version.

A replica is a server process the way a bank branch has tellers: a fixed
number of workers (CPU slots, `labsim.model.workers`) serve requests one at a
time each, and a queue forms when all are busy. Besides the workers a replica
holds open connections (an SSE stream stays open as long as its call, and a
connection the balancer keeps for reuse stays open idle for a while after its
request), memory for calls that wait on a user, and a set of the calls it is
serving, which a crash or the end of a drain cuts.

The connection limit acts as the lab's server applies it (uvicorn's
`limit_concurrency`, the server's `--max-connections`): a request that arrives while
the open connections, its own counted, have reached the limit is answered 503 at once
and its connection closed, whatever it is: an MRTR round, a legacy stream, an answer
POST, a health check. The balancer's health checks (`labsim.model.health_check`) take
a replica that fails them out of rotation (`Replica.checked_up`).
"""

from __future__ import annotations

import enum
import random
from collections import deque
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
        "check_streak",
        "checked_up",
        "connections",
        "count_from_s",
        "count_until_s",
        "env",
        "held",
        "idle",
        "index",
        "keepalive_s",
        "limit",
        "peak_connections",
        "peak_held",
        "refused",
        "state",
        "version",
        "worked_s",
        "workers",
    )

    def __init__(
        self,
        env: simpy.Environment,
        index: int,
        params: ClusterParams,
        version: int,
        window: tuple[float, float] = (0.0, float("inf")),
    ) -> None:
        self.env = env
        self.index = index
        self.workers = WorkerPool(env, params.workers_per_replica)
        self.limit = params.connection_limit
        self.keepalive_s = params.keepalive_idle_s
        # Connections serving a request or holding a stream, and the instants at which the
        # idle ones (kept by the balancer for reuse) last served, oldest first.
        self.connections = 0
        self.idle: deque[float] = deque()
        # Calls whose memory this replica keeps while their user thinks, the peaks of that
        # and of open connections, and the requests refused at the limit, counted inside
        # the measurement window (`count_from_s` is the end of the warm-up).
        self.held = 0
        self.peak_held = 0
        self.peak_connections = 0
        self.refused = 0
        self.count_from_s, self.count_until_s = window
        # The balancer's view from its health checks: in rotation, and how many checks in a
        # row have gone the other way (towards a change of that view).
        self.checked_up = True
        self.check_streak = 0
        self.busy_s = 0.0  # worker-seconds inside the measurement window
        self.worked_s = 0.0  # worker-seconds since the start, for an autoscaler's metric
        self.state = ReplicaState.UP
        self.version = version
        # The call processes this replica is serving or holding; a crash cuts them all, in
        # the order they attached (a dict: a set's order follows memory addresses, and the
        # same seed would not give the same run).
        self.attached: dict[Process, None] = {}
        self._drained: simpy.Event | None = None

    def open_connections(self) -> int:
        """Connections open now: requests in progress, held streams, and idle keep-alive
        connections (one idle longer than the keep-alive time has been closed)."""
        idle = self.idle
        if idle:
            closed_before_s = self.env.now - self.keepalive_s
            while idle and idle[0] <= closed_before_s:
                idle.popleft()
        return self.connections + len(idle)

    def admit(self) -> bool:
        """A request arrives from the balancer, on an idle connection if one is open, else on
        a new one: served (True) while the open connections, its own counted, are fewer
        than the limit; otherwise refused with 503, and its connection closes."""
        now_open = self.open_connections()
        if self.idle:
            self.idle.pop()  # the most recently used: older ones time out first
        else:
            now_open += 1
        if now_open >= self.limit:
            if self.count_from_s <= self.env.now < self.count_until_s:
                self.refused += 1
            return False
        self.connections += 1
        if now_open > self.peak_connections and self.env.now >= self.count_from_s:
            self.peak_connections = now_open
        return True

    def release(self) -> None:
        """A request or a stream ends with its answer: its connection stays open, idle, for
        the balancer to reuse, until the keep-alive time passes (closes at once without)."""
        self.connections -= 1
        if self.keepalive_s > 0 and self.state is not ReplicaState.DOWN:
            self.idle.append(self.env.now)

    def close(self) -> None:
        """A connection closes with its request: cut by a crash or a drain, or given up."""
        self.connections -= 1

    def hold(self, delta: int) -> None:
        """Start (+1) or stop (-1) keeping a waiting call's memory."""
        n = self.held + delta
        self.held = n
        if n > self.peak_held and self.env.now >= self.count_from_s:
            self.peak_held = n

    def accepts_cookie(self) -> bool:
        """Whether a request pinned here by a cookie still reaches this replica: up or
        draining, and not taken out of rotation by its health checks (the balancer then
        sends the request to another replica, HAProxy's `option redispatch`)."""
        state = self.state
        return self.checked_up and (state is ReplicaState.UP or state is ReplicaState.DRAINING)

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
        self.window = window
        self.replicas = [
            Replica(env, k, params, params.tool_version, window) for k in range(params.replicas)
        ]
        self.routable: list[Replica] = list(self.replicas)
        self.balancer: Balancer = make_balancer(params.lb_policy, rng, sticky=sticky)
        # Requests the balancer could send nowhere (no replica in rotation: HAProxy answers
        # 503 itself) and replicas its health checks took out of rotation, in the window.
        self.unrouted = 0
        self.down_marks = 0
        self.full_marks = 0  # of the down marks, those of a replica at its connection limit
        t0, t1 = window
        self.in_flight = Gauge(t0, t1)  # calls arrived and not yet ended
        self.held = Gauge(t0, t1)  # calls whose replica keeps memory while the user thinks
        self.streams = Gauge(t0, t1)  # open SSE streams
        self.billed = Gauge(t0, t1)  # replicas running (billed), up or draining
        self.billed.move(0.0, params.replicas)

    def route(self, call: object | None = None) -> Replica | None:
        """The replica the load balancer sends a request of `call` to (None if none is in
        rotation: the balancer answers 503 itself)."""
        replica = self.balancer.route(self.routable, call)
        if replica is None and self.window[0] <= self.env.now < self.window[1]:
            self.unrouted += 1
        return replica

    def set_state(self, replica: Replica, state: ReplicaState, detail: str = "") -> None:
        """Move a replica to a new state, updating routing and billing, and note the event."""
        previous = replica.state
        if previous is state:
            return
        replica.state = state
        self._reroute()
        now = self.env.now
        if state is ReplicaState.DOWN:
            self.billed.move(now, -1)
            replica.idle.clear()  # a stopped process holds no connection
        elif previous is ReplicaState.DOWN:
            self.billed.move(now, +1)
        self.recorder.event(now, state.value, replica.index, detail)

    def mark(self, replica: Replica, up: bool, detail: str, full: bool = False) -> None:
        """The balancer's health checks put `replica` back in rotation (`up`) or take it out
        (`full`: because it was at its connection limit)."""
        replica.checked_up = up
        replica.check_streak = 0
        self._reroute()
        now = self.env.now
        if not up and self.window[0] <= now < self.window[1]:
            self.down_marks += 1
            self.full_marks += full
        self.recorder.event(now, "check-up" if up else "check-down", replica.index, detail)

    def _reroute(self) -> None:
        self.routable = [r for r in self.replicas if r.state is ReplicaState.UP and r.checked_up]

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
        replica = Replica(self.env, len(self.replicas), self.params, version, self.window)
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

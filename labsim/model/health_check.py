"""The load balancer's health checks: a replica that fails them is taken out of rotation.

Like a doorman who looks into each shop every few minutes and turns customers away from
one that does not answer, the balancer asks every replica `GET /healthz` every
`health_check_interval_s` (the lab's HAProxy: `check inter 300 fall 1 rise 1`,
`timeout check 2s`, in `loadtest/harness/haproxy.py`). A check fails when

- the replica is at its connection limit: the check is a connection like any other, and
  the server answers it 503 (open connections, the check's own counted, reach the
  limit), or
- its answer does not come within `health_check_timeout_s`: the check waits its turn
  behind the requests queued for the replica's workers.

`health_check_fall` failures in a row take the replica out of rotation: no new request
reaches it, a request pinned to it by a sticky cookie goes to another replica (HAProxy's
`option redispatch`), and with no replica in rotation the balancer answers 503 itself
(`Cluster.route` gives None). `health_check_rise` passes in a row bring it back. A
crashed or stopped replica leaves rotation by its state (`ReplicaState.DOWN`), at once.
"""

from __future__ import annotations

from collections.abc import Generator

import simpy

from labsim.model.cluster import Cluster, Replica, ReplicaState
from labsim.model.deployment import ClusterParams

_CHECKED = (ReplicaState.UP, ReplicaState.DRAINING)


class HealthChecks:
    """The balancer checking every running replica, every interval, while calls go on."""

    def __init__(
        self, env: simpy.Environment, cluster: Cluster, params: ClusterParams, until_s: float
    ) -> None:
        self.env = env
        self.cluster = cluster
        self.interval_s = params.health_check_interval_s
        self.timeout_s = params.health_check_timeout_s
        self.fall = params.health_check_fall
        self.rise = params.health_check_rise
        self.until_s = until_s

    def run(self) -> Generator[simpy.Event, object, None]:
        """Check every replica each interval, until the arrivals are over and no call is left."""
        env, cluster = self.env, self.cluster
        while env.now < self.until_s or cluster.in_flight.value > 0:
            yield env.timeout(self.interval_s)
            for replica in cluster.replicas:
                if replica.state in _CHECKED:
                    self._check(replica)

    def _check(self, replica: Replica) -> None:
        if replica.open_connections() + 1 >= replica.limit:
            self._outcome(replica, False, "503: at its connection limit", full=True)
            return
        queue = replica.workers.queue
        if not queue:
            self._outcome(replica, True, "200")
        else:
            self.env.process(self._queued(replica, queue[-1]))

    def _queued(
        self, replica: Replica, last_in_line: simpy.Event
    ) -> Generator[simpy.Event, object, None]:
        """A check behind the requests waiting for the replica's workers: answered once the
        last of them has a worker (a check costs next to nothing), failed if that is later
        than the timeout. It waits outside the line, so that a replica's load shedding,
        which counts the requests in line, does not count checks."""
        replica.connections += 1  # the check's own connection, not one kept for reuse
        yield last_in_line | self.env.timeout(self.timeout_s)
        replica.close()
        if last_in_line.triggered:
            self._outcome(replica, True, "200")
        else:
            self._outcome(replica, False, f"no answer within {self.timeout_s:g} s")

    def _outcome(self, replica: Replica, passed: bool, detail: str, full: bool = False) -> None:
        """Count a check's outcome; enough in a row against the balancer's view change it."""
        if passed == replica.checked_up:
            replica.check_streak = 0
            return
        replica.check_streak += 1
        if replica.check_streak >= (self.rise if passed else self.fall):
            self.cluster.mark(replica, passed, detail, full)

"""Load-balancer policies: which replica a request goes to.

A load balancer sees the replicas that accept new work (`Cluster.routable`) and
picks one per request. Round-robin deals requests out in turn, like a card
dealer; random throws them; least-connections sends each to the replica with
the fewest open connections; power-of-two-choices asks two replicas at random
and takes the less busy (Mitzenmacher); cookie-sticky pins every follow-up of a
call to the replica that served its first request, as HAProxy's `cookie SRV
insert` does, and keeps routing there while that replica drains.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol, TypeVar

from labsim.model.checks import ParameterError


class Routable(Protocol):
    """What a load balancer sees of a replica (`labsim.model.cluster.Replica`)."""

    @property
    def connections(self) -> int:
        """Connections open on it now."""
        ...

    def accepts_cookie(self) -> bool:
        """Whether a request pinned to it by a cookie still reaches it."""
        ...


ReplicaT = TypeVar("ReplicaT", bound=Routable)


class Balancer(Protocol):
    """A load-balancing policy: picks a replica for a request of a call."""

    def route(self, routable: list[ReplicaT], call: object | None = None) -> ReplicaT | None:
        """The replica the request goes to, or None when no replica accepts work."""
        ...


class RoundRobin:
    """Deal requests to the routable replicas in turn."""

    def __init__(self, rng: random.Random) -> None:
        self._turn = 0

    def route(self, routable: list[ReplicaT], call: object | None = None) -> ReplicaT | None:
        if not routable:
            return None
        self._turn += 1
        return routable[self._turn % len(routable)]


class RandomChoice:
    """Send each request to a replica drawn uniformly at random."""

    def __init__(self, rng: random.Random) -> None:
        self._random = rng.random

    def route(self, routable: list[ReplicaT], call: object | None = None) -> ReplicaT | None:
        if not routable:
            return None
        return routable[int(self._random() * len(routable))]


class LeastConnections:
    """Send each request to the replica with the fewest open connections.

    Ties go round-robin, as HAProxy's `leastconn` does, so that an idle
    cluster is not served by its first replica alone.
    """

    def __init__(self, rng: random.Random) -> None:
        self._turn = 0

    def route(self, routable: list[ReplicaT], call: object | None = None) -> ReplicaT | None:
        n = len(routable)
        if n == 0:
            return None
        self._turn += 1
        start = self._turn % n
        best = routable[start]
        fewest = best.connections
        for k in range(1, n):
            replica = routable[(start + k) % n]
            if replica.connections < fewest:
                best, fewest = replica, replica.connections
        return best


class PowerOfTwoChoices:
    """Ask two distinct replicas drawn at random; send to the one with fewer connections."""

    def __init__(self, rng: random.Random) -> None:
        self._random = rng.random

    def route(self, routable: list[ReplicaT], call: object | None = None) -> ReplicaT | None:
        n = len(routable)
        if n <= 1:
            return routable[0] if n else None
        first = int(self._random() * n)
        second = int(self._random() * (n - 1))
        if second >= first:
            second += 1
        a, b = routable[first], routable[second]
        return b if b.connections < a.connections else a


class CookieSticky:
    """Pin a call's session to the replica that served its first request (an affinity cookie).

    The first request goes where the underlying policy says; the cookie then
    keeps the session (every call of it) on that replica, even while it drains, until the replica
    goes down, when the request is redispatched and the cookie rewritten.
    """

    def __init__(self, base: Balancer) -> None:
        self.base = base

    def route(self, routable: list[ReplicaT], call: object | None = None) -> ReplicaT | None:
        session = getattr(call, "session", None)
        pinned = session.cookie if session is not None else None
        if pinned is not None and pinned.accepts_cookie():
            return pinned
        replica = self.base.route(routable, call)
        if session is not None:
            session.cookie = replica
        return replica


_POLICIES: dict[str, Callable[[random.Random], Balancer]] = {
    "round-robin": RoundRobin,
    "random": RandomChoice,
    "least-connections": LeastConnections,
    "power-of-two": PowerOfTwoChoices,
}


def make_balancer(policy: str, rng: random.Random, sticky: bool = False) -> Balancer:
    """The balancer for a policy name; `sticky` adds cookie affinity on top of it."""
    if policy == "cookie-sticky":
        return CookieSticky(RoundRobin(rng))
    if policy not in _POLICIES:
        raise ParameterError(f"unknown load-balancer policy {policy!r}")
    base = _POLICIES[policy](rng)
    return CookieSticky(base) if sticky else base

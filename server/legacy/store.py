"""Where legacy (2025-11-25) sessions and pending answers live: this process, or Redis.

Under the legacy protocol a tool that needs input holds its `tools/call` open on an SSE
stream and sends a JSON-RPC request on it; the client's answer comes back as a separate
POST, which a load balancer may route to any replica. A `LegacyStore` is the small
interface that gets that answer to the call waiting for it:

- `MemoryStore`: sessions and waiting calls in this process only. An answer that reaches
  another replica finds neither and is refused, so this works only behind a sticky load
  balancer (one that sends every request of a session to the same replica).
- `RedisStore`: sessions and pending requests are registered in Redis, so every replica
  knows every session; the replica that receives an answer publishes it on the waiting
  replica's channel and the waiting call continues. Every Redis call is bounded by a
  timeout, so an outage is a `StoreUnavailable` error, never a hang.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from server.core.store import StoreFull, StoreUnavailable

log = logging.getLogger("server.legacy")


class Delivery(Enum):
    """What became of an answer a client POSTed."""

    #: A call waiting on this replica took it.
    LOCAL = "local"
    #: It was published to the replica whose call waits for it.
    RELAYED = "relayed"
    #: No call anywhere the store can see waits for this request (answered, timed out, or
    #: waiting on another replica that this store cannot reach).
    UNKNOWN_REQUEST = "unknown_request"


@dataclass
class Session:
    """A legacy client's session: who opened it, what it can answer, what it asked for."""

    session_id: str
    principal: str
    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any]
    #: Set by `logging/setLevel`; no log messages are sent before it.
    log_level: str | None = None
    #: Resource URIs the client subscribed to (in the memory store; the Redis store keeps
    #: them in a set of their own, so a subscription never rewrites the session).
    subscriptions: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Session:
        return cls(**json.loads(text))


class TooManySessions(Exception):
    """A principal already has as many open sessions as one may have."""


@dataclass(frozen=True)
class SubscriptionLimits:
    """What one session and one principal may keep of resource subscriptions (0: no cap)."""

    #: Resource URIs one session may subscribe to.
    max_per_session: int = 0
    #: Bytes (UTF-8) the URIs of all a principal's sessions may add up to.
    max_bytes_per_principal: int = 0


class SubscriptionRefused(Exception):
    """A subscription the store will not keep: the session or its principal is at a cap."""

    def __init__(self, cap: str, limit: int, *, would_be: int) -> None:
        #: Which cap: `subscriptions_per_session` or `subscription_bytes_per_principal`.
        self.cap = cap
        self.limit = limit
        #: The count or bytes the subscription would have made.
        self.would_be = would_be
        super().__init__(f"{cap}: {would_be} over {limit}")


#: What a session's objects in this process take beyond its JSON (measured: about 900
#: bytes for a small one), and a subscribed URI's beyond its bytes (its string and slot).
SESSION_OVERHEAD_BYTES = 1024
SUBSCRIPTION_OVERHEAD_BYTES = 64


def _subscribed_bytes(uri: str) -> int:
    """What a subscribed URI takes of the in-process store's cap."""
    return uri_bytes(uri) + SUBSCRIPTION_OVERHEAD_BYTES


def uri_bytes(uri: str) -> int:
    """What one subscribed URI takes in a store (its UTF-8 bytes; the JSON parser has
    already refused lone surrogates)."""
    return len(uri.encode("utf-8"))


class LegacyStore(ABC):
    """Sessions, and a rendezvous between a waiting call and the answer to its request."""

    #: `memory` or `redis`, for health and metrics.
    kind: str

    @abstractmethod
    async def close(self) -> None:
        """Release connections; calls still waiting fail with `StoreUnavailable`."""

    @abstractmethod
    async def create_session(self, session: Session, *, max_per_principal: int = 0) -> None:
        """Register a new session; with `max_per_principal` > 0, refuse it
        (`TooManySessions`) when its principal already has that many open."""

    @abstractmethod
    async def session(self, session_id: str, principal: str = "") -> Session | None:
        """The session with this id, renewing its idle lifetime (and, given the caller's
        `principal`, that of the principal's index of sessions); None when unknown here."""

    @abstractmethod
    async def save_session(self, session: Session) -> None:
        """Store a changed session (log level, subscriptions)."""

    @abstractmethod
    async def end_session(self, session_id: str) -> bool:
        """Forget a session; whether it existed."""

    @abstractmethod
    async def subscribe(self, session: Session, uri: str, limits: SubscriptionLimits) -> None:
        """Add `uri` to the session's subscriptions without rewriting the session; refuse
        it (`SubscriptionRefused`) when the session or its principal is at a cap. A URI
        already subscribed is kept once and costs nothing more."""

    @abstractmethod
    async def unsubscribe(self, session: Session, uri: str) -> None:
        """Remove `uri` from the session's subscriptions (nothing when it is not there)."""

    @abstractmethod
    async def subscriptions(self, session_id: str) -> list[str]:
        """The URIs a session subscribes to, sorted."""

    @abstractmethod
    async def expect(self, session_id: str, request_id: str) -> asyncio.Future[dict[str, Any]]:
        """Register a request sent to the client; the future resolves to the client's answer."""

    @abstractmethod
    async def forget(self, session_id: str, request_id: str) -> None:
        """Stop waiting for an answer (it came, the call timed out, or was cancelled)."""

    @abstractmethod
    async def deliver(self, session_id: str, request_id: str, message: dict[str, Any]) -> Delivery:
        """Hand a client's answer to whichever call waits for it."""

    @abstractmethod
    def local_sessions(self) -> int:
        """Sessions that exist only on this replica (a drain must wait for them)."""


class WaitingCalls:
    """The answers this process waits for, by (session id, request id)."""

    def __init__(self) -> None:
        self._futures: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}

    def add(self, session_id: str, request_id: str) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._futures[(session_id, request_id)] = future
        return future

    def resolve(self, session_id: str, request_id: str, message: dict[str, Any]) -> bool:
        """Give the answer to its waiting call; False when none waits here."""
        future = self._futures.pop((session_id, request_id), None)
        if future is None or future.done():
            return False
        future.set_result(message)
        return True

    def forget(self, session_id: str, request_id: str) -> None:
        self._futures.pop((session_id, request_id), None)

    def fail_all(self, error: BaseException) -> None:
        """End every wait with `error` (the store that would carry the answers is gone)."""
        futures, self._futures = self._futures, {}
        for future in futures.values():
            if not future.done():
                future.set_exception(error)

    def __len__(self) -> int:
        return len(self._futures)


class MemoryStore(LegacyStore):
    """Sessions and waiting calls in this process: correct only behind a sticky balancer.

    It keeps at most `max_bytes` of sessions (each as JSON when opened and its subscribed
    URIs, with what their objects take beyond): many principals' sessions fill that cap
    (`StoreFull`, 507), as they would a Redis at its `maxmemory`, never the replica's memory.
    """

    kind = "memory"

    def __init__(self, *, session_ttl_s: float, max_bytes: int = 0) -> None:
        self.session_ttl_s = session_ttl_s
        #: The most the sessions may take (0: no cap), and what they take now.
        self.max_bytes = max_bytes
        self.stored_bytes = 0
        #: session id -> (session, monotonic time it expires)
        self._sessions: dict[str, tuple[Session, float]] = {}
        #: session id -> the bytes it takes of `max_bytes`
        self._charged: dict[str, int] = {}
        #: principal -> ids of its sessions (for the per-principal cap)
        self._of_principal: dict[str, set[str]] = {}
        #: principal -> the bytes of the URIs its sessions subscribe to (its cap's count,
        #: kept as they change so a subscription costs the same however many there are)
        self._subscribed_of: dict[str, int] = {}
        self._waiting = WaitingCalls()
        self._next_purge = 0.0

    async def close(self) -> None:
        self._waiting.fail_all(StoreUnavailable("legacy", "close"))

    async def create_session(self, session: Session, *, max_per_principal: int = 0) -> None:
        self._purge()
        now = time.monotonic()
        if max_per_principal:
            for session_id in list(self._of_principal.get(session.principal, ())):
                if self._sessions[session_id][1] <= now:
                    self._drop(session_id)
            if len(self._of_principal.get(session.principal, ())) >= max_per_principal:
                raise TooManySessions
        size = len(session.to_json()) + SESSION_OVERHEAD_BYTES
        self._charge(session.session_id, size, "create_session")
        self._sessions[session.session_id] = (session, now + self.session_ttl_s)
        self._of_principal.setdefault(session.principal, set()).add(session.session_id)

    async def session(self, session_id: str, principal: str = "") -> Session | None:
        entry = self._sessions.get(session_id)
        if entry is None:
            return None
        now = time.monotonic()
        if entry[1] <= now:
            self._drop(session_id)
            return None
        self._sessions[session_id] = (entry[0], now + self.session_ttl_s)
        return entry[0]

    async def save_session(self, session: Session) -> None:
        if session.session_id in self._sessions:
            expires = self._sessions[session.session_id][1]
            self._sessions[session.session_id] = (session, expires)

    async def end_session(self, session_id: str) -> bool:
        return self._drop(session_id)

    async def subscribe(self, session: Session, uri: str, limits: SubscriptionLimits) -> None:
        entry = self._sessions.get(session.session_id)
        if entry is None:
            return
        kept = entry[0]
        if uri in kept.subscriptions:
            return
        count = len(kept.subscriptions) + 1
        if limits.max_per_session and count > limits.max_per_session:
            raise SubscriptionRefused(
                "subscriptions_per_session", limits.max_per_session, would_be=count
            )
        size = uri_bytes(uri)
        total = self._subscribed_of.get(kept.principal, 0) + size
        if limits.max_bytes_per_principal and total > limits.max_bytes_per_principal:
            limit = limits.max_bytes_per_principal
            raise SubscriptionRefused("subscription_bytes_per_principal", limit, would_be=total)
        self._charge(kept.session_id, _subscribed_bytes(uri), "subscribe_resource")
        self._subscribed_of[kept.principal] = total
        kept.subscriptions = sorted({*kept.subscriptions, uri})

    async def unsubscribe(self, session: Session, uri: str) -> None:
        entry = self._sessions.get(session.session_id)
        if entry is not None and uri in entry[0].subscriptions:
            entry[0].subscriptions = [one for one in entry[0].subscriptions if one != uri]
            self._charge(session.session_id, -_subscribed_bytes(uri), "unsubscribe_resource")
            self._unsubscribed(entry[0].principal, uri_bytes(uri))

    def _unsubscribed(self, principal: str, size: int) -> None:
        """Take `size` bytes of URIs off a principal's count (forgotten at none)."""
        left = self._subscribed_of.get(principal, 0) - size
        if left > 0:
            self._subscribed_of[principal] = left
        else:
            self._subscribed_of.pop(principal, None)

    async def subscriptions(self, session_id: str) -> list[str]:
        entry = self._sessions.get(session_id)
        return list(entry[0].subscriptions) if entry is not None else []

    def _charge(self, session_id: str, more_bytes: int, operation: str) -> None:
        """Count `more_bytes` against the cap for a session; `StoreFull` when they do not fit."""
        if more_bytes > 0 and self.max_bytes and self.stored_bytes + more_bytes > self.max_bytes:
            raise StoreFull("legacy", operation)
        self.stored_bytes += more_bytes
        self._charged[session_id] = self._charged.get(session_id, 0) + more_bytes

    def _drop(self, session_id: str) -> bool:
        entry = self._sessions.pop(session_id, None)
        if entry is None:
            return False
        self.stored_bytes -= self._charged.pop(session_id, 0)
        if entry[0].subscriptions:
            size = sum(uri_bytes(one) for one in entry[0].subscriptions)
            self._unsubscribed(entry[0].principal, size)
        mine = self._of_principal.get(entry[0].principal, set())
        mine.discard(session_id)
        if not mine:
            self._of_principal.pop(entry[0].principal, None)
        return True

    async def expect(self, session_id: str, request_id: str) -> asyncio.Future[dict[str, Any]]:
        return self._waiting.add(session_id, request_id)

    async def forget(self, session_id: str, request_id: str) -> None:
        self._waiting.forget(session_id, request_id)

    async def deliver(self, session_id: str, request_id: str, message: dict[str, Any]) -> Delivery:
        if self._waiting.resolve(session_id, request_id, message):
            return Delivery.LOCAL
        return Delivery.UNKNOWN_REQUEST

    def local_sessions(self) -> int:
        self._purge(force=True)
        return len(self._sessions)

    def _purge(self, *, force: bool = False) -> None:
        # Expired sessions are dropped at most once a second, not on every request.
        now = time.monotonic()
        if not force and now < self._next_purge:
            return
        self._next_purge = now + 1.0
        for session_id in [s for s, (_, expires) in self._sessions.items() if expires <= now]:
            self._drop(session_id)

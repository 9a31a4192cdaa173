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
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, Protocol, TypeVar

log = logging.getLogger("server.legacy")

T = TypeVar("T")
#: Prefix of every key and channel the lab writes in Redis.
KEY_PREFIX = "mrtr:legacy"


class StoreUnavailable(Exception):
    """The shared store did not answer in time (or at all): the operation failed cleanly."""

    def __init__(self, operation: str, cause: BaseException | str) -> None:
        reason = str(cause) or type(cause).__name__
        super().__init__(f"legacy store unavailable during {operation}: {reason}")
        self.operation = operation


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
    #: Resource URIs the client subscribed to.
    subscriptions: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Session:
        return cls(**json.loads(text))


class LegacyStore(Protocol):
    """Sessions, and a rendezvous between a waiting call and the answer to its request."""

    #: `memory` or `redis`, for health and metrics.
    kind: str

    async def close(self) -> None:
        """Release connections; calls still waiting fail with `StoreUnavailable`."""
        ...

    async def create_session(self, session: Session) -> None:
        """Register a new session."""
        ...

    async def session(self, session_id: str) -> Session | None:
        """The session with this id, renewing its idle lifetime; None when unknown here."""
        ...

    async def save_session(self, session: Session) -> None:
        """Store a changed session (log level, subscriptions)."""
        ...

    async def end_session(self, session_id: str) -> bool:
        """Forget a session; whether it existed."""
        ...

    async def expect(self, session_id: str, request_id: str) -> asyncio.Future[dict[str, Any]]:
        """Register a request sent to the client; the future resolves to the client's answer."""
        ...

    async def forget(self, session_id: str, request_id: str) -> None:
        """Stop waiting for an answer (it came, the call timed out, or was cancelled)."""
        ...

    async def deliver(self, session_id: str, request_id: str, message: dict[str, Any]) -> Delivery:
        """Hand a client's answer to whichever call waits for it."""
        ...

    def local_sessions(self) -> int:
        """Sessions that exist only on this replica (a drain must wait for them)."""
        ...


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


class MemoryStore:
    """Sessions and waiting calls in this process: correct only behind a sticky balancer."""

    kind = "memory"

    def __init__(self, *, session_ttl_s: float) -> None:
        self.session_ttl_s = session_ttl_s
        #: session id -> (session, monotonic time it expires)
        self._sessions: dict[str, tuple[Session, float]] = {}
        self._waiting = WaitingCalls()
        self._next_purge = 0.0

    async def close(self) -> None:
        self._waiting.fail_all(StoreUnavailable("close", "the replica is shutting down"))

    async def create_session(self, session: Session) -> None:
        self._purge()
        self._sessions[session.session_id] = (session, time.monotonic() + self.session_ttl_s)

    async def session(self, session_id: str) -> Session | None:
        entry = self._sessions.get(session_id)
        if entry is None:
            return None
        now = time.monotonic()
        if entry[1] <= now:
            del self._sessions[session_id]
            return None
        self._sessions[session_id] = (entry[0], now + self.session_ttl_s)
        return entry[0]

    async def save_session(self, session: Session) -> None:
        if session.session_id in self._sessions:
            expires = self._sessions[session.session_id][1]
            self._sessions[session.session_id] = (session, expires)

    async def end_session(self, session_id: str) -> bool:
        return self._sessions.pop(session_id, None) is not None

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
            del self._sessions[session_id]


class RedisStore:
    """Sessions and pending requests in Redis; answers published to the waiting replica.

    Keys (all under `mrtr:legacy`): `session:<id>` holds a session as JSON with an idle
    TTL; `pending:<session>:<request>` names the channel of the replica waiting for that
    answer, with a TTL a little past the answer timeout. Each replica process listens on
    its own channel `answers:<replica>:<instance>`.
    """

    kind = "redis"

    def __init__(
        self,
        url: str,
        *,
        replica_id: str,
        session_ttl_s: float,
        answer_timeout_s: float,
        timeout_s: float,
    ) -> None:
        self.url = url
        self.session_ttl_s = session_ttl_s
        self.timeout_s = timeout_s
        # A pending request outlives its wait a little, so a late answer is still recognised
        # as "no longer waited for" rather than as a stranger.
        self.pending_ttl_ms = int((answer_timeout_s + timeout_s) * 1000) + 1000
        self.channel = f"{KEY_PREFIX}:answers:{replica_id}:{uuid.uuid4().hex[:8]}"
        # Imported here: a replica with the memory store starts without loading redis-py.
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import RedisError

        self._store_errors: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
        # No retries inside redis-py: a failure is reported at once and counted.
        self._redis = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=max(1, int(timeout_s * 5)),
        )
        self._waiting = WaitingCalls()
        self._listener: asyncio.Task[None] | None = None
        self._listen_lock = asyncio.Lock()

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        self._waiting.fail_all(StoreUnavailable("close", "the replica is shutting down"))
        with contextlib.suppress(Exception):
            await self._redis.aclose()

    async def create_session(self, session: Session) -> None:
        await self._call(
            "create_session",
            self._redis.set(self._session_key(session.session_id), session.to_json(), px=self._ttl),
        )

    async def session(self, session_id: str) -> Session | None:
        raw = await self._call(
            "session", self._redis.getex(self._session_key(session_id), px=self._ttl)
        )
        return Session.from_json(raw) if raw is not None else None

    async def save_session(self, session: Session) -> None:
        key = self._session_key(session.session_id)
        await self._call(
            "save_session", self._redis.set(key, session.to_json(), px=self._ttl, xx=True)
        )

    async def end_session(self, session_id: str) -> bool:
        return bool(
            await self._call("end_session", self._redis.delete(self._session_key(session_id)))
        )

    async def expect(self, session_id: str, request_id: str) -> asyncio.Future[dict[str, Any]]:
        await self._listen()
        future = self._waiting.add(session_id, request_id)
        try:
            await self._call(
                "expect",
                self._redis.set(
                    self._pending_key(session_id, request_id), self.channel, px=self.pending_ttl_ms
                ),
            )
        except StoreUnavailable:
            self._waiting.forget(session_id, request_id)
            raise
        return future

    async def forget(self, session_id: str, request_id: str) -> None:
        self._waiting.forget(session_id, request_id)
        await self._call("forget", self._redis.delete(self._pending_key(session_id, request_id)))

    async def deliver(self, session_id: str, request_id: str, message: dict[str, Any]) -> Delivery:
        if self._waiting.resolve(session_id, request_id, message):
            return Delivery.LOCAL
        # GETDEL makes an answer single-use: a second POST of it finds nothing.
        key = self._pending_key(session_id, request_id)
        channel = await self._call("deliver", self._redis.getdel(key))
        if channel is None:
            return Delivery.UNKNOWN_REQUEST
        envelope = json.dumps({"session": session_id, "id": request_id, "message": message})
        receivers = await self._call("deliver", self._redis.publish(channel, envelope))
        # Nobody listening: the waiting replica is gone (crashed or restarted).
        return Delivery.RELAYED if receivers else Delivery.UNKNOWN_REQUEST

    def local_sessions(self) -> int:
        # Sessions live in Redis: none is bound to this replica.
        return 0

    @property
    def _ttl(self) -> int:
        return int(self.session_ttl_s * 1000)

    @staticmethod
    def _session_key(session_id: str) -> str:
        return f"{KEY_PREFIX}:session:{session_id}"

    @staticmethod
    def _pending_key(session_id: str, request_id: str) -> str:
        return f"{KEY_PREFIX}:pending:{session_id}:{request_id}"

    async def _call(self, operation: str, command: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(self.timeout_s):
                return await command
        except self._store_errors as exc:
            raise StoreUnavailable(operation, exc) from exc

    async def _listen(self) -> None:
        """Make sure this replica is subscribed to its answer channel before it asks."""
        if self._listener is not None and not self._listener.done():
            return
        async with self._listen_lock:
            if self._listener is not None and not self._listener.done():
                return
            pubsub = self._redis.pubsub()
            try:
                await self._call("subscribe", pubsub.subscribe(self.channel))
                # Wait for the confirmation, so no answer can be published before we listen.
                async with asyncio.timeout(self.timeout_s):
                    while True:
                        reply = await pubsub.get_message(timeout=self.timeout_s)
                        if reply is not None and reply.get("type") == "subscribe":
                            break
            except (StoreUnavailable, *self._store_errors) as exc:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                if isinstance(exc, StoreUnavailable):
                    raise
                raise StoreUnavailable("subscribe", exc) from exc
            self._listener = asyncio.create_task(self._relay_answers(pubsub))

    async def _relay_answers(self, pubsub: Any) -> None:
        """Hand every answer published to this replica to the call waiting for it."""
        try:
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if message is None:
                    continue
                try:
                    envelope = json.loads(message["data"])
                    self._waiting.resolve(envelope["session"], envelope["id"], envelope["message"])
                except (ValueError, KeyError, TypeError):
                    log.warning("ignoring a malformed answer envelope on %s", self.channel)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The connection to Redis is gone: no answer can reach the calls waiting here.
            log.warning("lost the answer channel %s: %s", self.channel, exc)
            self._waiting.fail_all(StoreUnavailable("listen", exc))
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()


def open_store(
    spec: str,
    *,
    replica_id: str,
    session_ttl_s: float,
    answer_timeout_s: float,
    timeout_s: float,
) -> LegacyStore:
    """The store `spec` names: `memory`, or a Redis URL."""
    if spec == "memory":
        return MemoryStore(session_ttl_s=session_ttl_s)
    return RedisStore(
        spec,
        replica_id=replica_id,
        session_ttl_s=session_ttl_s,
        answer_timeout_s=answer_timeout_s,
        timeout_s=timeout_s,
    )

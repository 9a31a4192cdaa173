"""The legacy store in Redis: every replica knows every session; answers are published.

See `server.legacy.store` for what a legacy store does. Here sessions and pending
requests are keys in Redis, so the replica that receives a client's answer can find the
replica whose call waits for it and publish the answer on that replica's channel.
Every Redis call is bounded by a timeout (`server.core.store`), so an outage is a
`StoreUnavailable` error, never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar

from server.core.store import StoreUnavailable, bounded
from server.legacy.store import (
    Delivery,
    LegacyStore,
    Session,
    SubscriptionLimits,
    SubscriptionRefused,
    TooManySessions,
    WaitingCalls,
    uri_bytes,
)

log = logging.getLogger("server.legacy")

T = TypeVar("T")
#: Prefix of every key and channel the lab writes in Redis.
KEY_PREFIX = "mrtr:legacy"
# A session under a per-principal cap: ids whose session expired or ended leave the
# principal's index first; a principal already at its cap is refused (0).
_CREATE_CAPPED = """
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if redis.call('EXISTS', ARGV[5] .. id) == 0 then redis.call('ZREM', KEYS[2], id) end
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
# A subscription added to the session's own set, under both caps. The principal's hash
# holds each of its sessions' subscribed bytes; sessions that ended or expired leave it
# first. Answers: 1 kept, 0 the session is gone, -1 the session's count cap, else minus
# the principal's bytes it would have made.
_SUBSCRIBE = """
if redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
local max_count = tonumber(ARGV[3])
if max_count > 0 and redis.call('SCARD', KEYS[1]) >= max_count then return -1 end
local max_bytes = tonumber(ARGV[4])
if max_bytes > 0 then
  local total = tonumber(ARGV[2])
  local held = redis.call('HGETALL', KEYS[2])
  for i = 1, #held, 2 do
    if redis.call('EXISTS', ARGV[5] .. held[i]) == 0 then
      redis.call('HDEL', KEYS[2], held[i])
    else
      total = total + tonumber(held[i + 1])
    end
  end
  if total > max_bytes then return -total end
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('HINCRBY', KEYS[2], ARGV[7], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return 1
"""
_UNSUBSCRIBE = """
if redis.call('SREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[3], -tonumber(ARGV[2]))
end
return 1
"""


class RedisStore(LegacyStore):
    """Sessions and pending requests in Redis; answers published to the waiting replica.

    Keys (all under `mrtr:legacy`): `session:<id>` holds a session as JSON with an idle
    TTL; `subscriptions:<id>` the set of its subscribed URIs, renewed with it (so a
    subscription adds one member, never rewrites the session); `subscribed-bytes-of:<principal>`
    each of a principal's sessions' subscribed bytes (for the per-principal cap), renewed
    with any session its principal uses;
    `sessions-of:<principal>` the ids of a principal's sessions, kept only under a
    per-principal cap, trimmed of ended ones at the principal's next `initialize` and
    expiring with the last session the principal used;
    `pending:<session>:<request>` names the channel of the replica waiting for that
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
        from redis.exceptions import OutOfMemoryError, RedisError

        self._store_errors: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
        #: A Redis at its maxmemory under noeviction refuses writes: full, not down.
        self._full_errors: tuple[type[BaseException], ...] = (OutOfMemoryError,)
        self._subscribe_errors: tuple[type[BaseException], ...] = (
            StoreUnavailable,
            *self._store_errors,
        )
        # No retries inside redis-py: a failure is reported at once and counted.
        self._redis = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=max(1, int(timeout_s * 5)),
        )
        self._create_capped = self._redis.register_script(_CREATE_CAPPED)
        self._subscribe = self._redis.register_script(_SUBSCRIBE)
        self._unsubscribe = self._redis.register_script(_UNSUBSCRIBE)
        self._waiting = WaitingCalls()
        self._listener: asyncio.Task[None] | None = None
        self._listen_lock = asyncio.Lock()

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        self._waiting.fail_all(StoreUnavailable("legacy", "close"))
        with contextlib.suppress(Exception):
            await self._redis.aclose()

    async def create_session(self, session: Session, *, max_per_principal: int = 0) -> None:
        key = self._session_key(session.session_id)
        if not max_per_principal:
            await self._call(
                "create_session", self._redis.set(key, session.to_json(), px=self._ttl)
            )
            return
        index = self._sessions_of_key(session.principal)
        args: list[str | int] = [session.to_json(), self._ttl, session.session_id]
        args += [max_per_principal, self._session_key(""), int(time.time() * 1000)]
        created = await self._call(
            "create_session", self._create_capped(keys=[key, index], args=args)
        )
        if not created:
            raise TooManySessions

    async def session(self, session_id: str, principal: str = "") -> Session | None:
        # One round trip renews the session, its subscriptions and its principal's index
        # and subscribed bytes alike: both outlive every session its principal still uses.
        pipe = self._redis.pipeline(transaction=False)
        pipe.getex(self._session_key(session_id), px=self._ttl)
        pipe.pexpire(self._subscriptions_key(session_id), self._ttl)
        if principal:
            pipe.pexpire(self._sessions_of_key(principal), self._ttl)
            pipe.pexpire(self._subscribed_bytes_key(principal), self._ttl)
        raw = (await self._call("session", pipe.execute()))[0]
        return Session.from_json(raw) if raw is not None else None

    async def save_session(self, session: Session) -> None:
        key = self._session_key(session.session_id)
        await self._call(
            "save_session", self._redis.set(key, session.to_json(), px=self._ttl, xx=True)
        )

    async def end_session(self, session_id: str) -> bool:
        keys = (self._session_key(session_id), self._subscriptions_key(session_id))
        return bool(await self._call("end_session", self._redis.delete(*keys)))

    async def subscribe(self, session: Session, uri: str, limits: SubscriptionLimits) -> None:
        size = uri_bytes(uri)
        keys = [
            self._subscriptions_key(session.session_id),
            self._subscribed_bytes_key(session.principal),
            self._session_key(session.session_id),
        ]
        args: list[str | int] = [uri, size, limits.max_per_session, limits.max_bytes_per_principal]
        args += [self._session_key(""), self._ttl, session.session_id]
        kept = int(await self._call("subscribe_resource", self._subscribe(keys=keys, args=args)))
        if kept == -1:
            count = limits.max_per_session + 1
            raise SubscriptionRefused(
                "subscriptions_per_session", limits.max_per_session, would_be=count
            )
        if kept < -1:
            limit = limits.max_bytes_per_principal
            raise SubscriptionRefused("subscription_bytes_per_principal", limit, would_be=-kept)

    async def unsubscribe(self, session: Session, uri: str) -> None:
        keys = [
            self._subscriptions_key(session.session_id),
            self._subscribed_bytes_key(session.principal),
        ]
        args: list[str | int] = [uri, uri_bytes(uri), session.session_id]
        await self._call("unsubscribe_resource", self._unsubscribe(keys=keys, args=args))

    async def subscriptions(self, session_id: str) -> list[str]:
        members = await self._call(
            "subscriptions", self._redis.smembers(self._subscriptions_key(session_id))
        )
        return sorted(m.decode() if isinstance(m, bytes) else m for m in members)

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
    def _sessions_of_key(principal: str) -> str:
        return f"{KEY_PREFIX}:sessions-of:{principal}"

    @staticmethod
    def _subscriptions_key(session_id: str) -> str:
        return f"{KEY_PREFIX}:subscriptions:{session_id}"

    @staticmethod
    def _subscribed_bytes_key(principal: str) -> str:
        return f"{KEY_PREFIX}:subscribed-bytes-of:{principal}"

    @staticmethod
    def _pending_key(session_id: str, request_id: str) -> str:
        return f"{KEY_PREFIX}:pending:{session_id}:{request_id}"

    async def _call(self, operation: str, command: Awaitable[T]) -> T:
        return await bounded(
            "legacy",
            operation,
            command,
            timeout_s=self.timeout_s,
            errors=self._store_errors,
            full=self._full_errors,
        )

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
            except self._subscribe_errors as exc:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                if isinstance(exc, StoreUnavailable):
                    raise
                raise StoreUnavailable("legacy", "subscribe") from exc
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
            self._waiting.fail_all(StoreUnavailable("legacy", "listen"))
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()

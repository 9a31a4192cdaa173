"""The task store in Redis: every replica sees every task; each task expires with its TTL.

See `server.tasks.store` for what a task store does. Keys, all under one prefix:

- `task:<id>`: a hash (`version`, `data`: the task as JSON), expiring with the task;
- `tasks-created:<principal>`: the principal's task ids scored by creation time, the
  index `tasks/list` pages through, so a page reads only its own tasks;
- `tasks-expiring:<principal>`: the same ids scored by expiry, so expired ids leave the
  index (and the live count a per-principal cap compares with) on the next creation;
- `epoch`: the name of the data's current life (see `TaskStore.epoch`).

Both indexes expire with the principal's last task. Every call is bounded by the store
timeout (`server.core.store`), so a dead store is an error, never a hang.

Whether the Redis keeps what it acknowledges (an append-only file, no eviction) is asked
on every connection it opens, so a Redis restarted (or first reached) without one is seen
at once: while it is so, new tasks are refused (`StoreVolatile`) unless the replica was
told to accept a volatile store.
"""

from __future__ import annotations

import secrets
from typing import Any

from server.core.store import StoreUnavailable, bounded
from server.tasks.store import (
    ListKey,
    StoreVolatile,
    TaskRecord,
    TaskStore,
    TooManyTasks,
    now_ms,
)

# A task is created only once, with its expiry, and indexed under its principal; expired
# ids leave both indexes first, and a principal at its cap of live tasks is refused (-1).
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[4])
for _, id in ipairs(expired) do redis.call('ZREM', KEYS[2], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[4])
local cap = tonumber(ARGV[6])
if cap > 0 and redis.call('ZCARD', KEYS[3]) >= cap then return -1 end
redis.call('HSET', KEYS[1], 'version', '0', 'data', ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[2], last[2])
redis.call('PEXPIREAT', KEYS[3], last[2])
return 1
"""
# Compare-and-set: write only if nobody wrote since we read. HSET keeps the key's TTL.
_COMPARE_AND_SET = """
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'data', ARGV[3])
return 1
"""


#: Connections a replica keeps to the task store at most; a command waits for a free one
#: (within the store's timeout). A store command takes well under a millisecond, so a few
#: dozen carry thousands a second; without a bound, every waiting `tasks/result` that
#: reads the store at once opened a connection of its own.
STORE_CONNECTIONS = 32


class RedisTaskStore(TaskStore):
    """Tasks in Redis, shared by every replica; each task's key expires with its TTL."""

    has_epochs = True

    def __init__(
        self, url: str, *, timeout_s: float, volatile_ok: bool = False, prefix: str = "mrtr-lab"
    ) -> None:
        import redis.asyncio as redis_asyncio

        self.url = url
        self.timeout_s = timeout_s
        self.prefix = prefix
        #: Whether tasks are created on a store that could lose them (--task-store-volatile).
        self.volatile_ok = volatile_ok
        #: What the last connection opened found that could lose tasks (None: none opened).
        self.problems: list[str] | None = None
        pool = redis_asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=STORE_CONNECTIONS,
            timeout=timeout_s,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            redis_connect_func=self._on_connect,
        )
        self._redis = redis_asyncio.Redis(connection_pool=pool)
        self._create = self._redis.register_script(_CREATE)
        self._cas = self._redis.register_script(_COMPARE_AND_SET)

    def _task_key(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def _index_keys(self, principal: str) -> list[str]:
        return [
            f"{self.prefix}:tasks-created:{principal}",
            f"{self.prefix}:tasks-expiring:{principal}",
        ]

    async def _call(self, operation: str, command: Any) -> Any:
        """Await one Redis command within the store timeout (see `server.core.store`).

        A Redis at its `maxmemory` under `noeviction` refuses writes: `StoreFull`.
        """
        from redis.exceptions import OutOfMemoryError, RedisError

        return await bounded(
            "task",
            operation,
            command,
            timeout_s=self.timeout_s,
            errors=(RedisError, OSError),
            full=(OutOfMemoryError,),
        )

    async def _on_connect(self, connection: Any) -> None:
        """Set up a new connection as redis-py does, then ask the Redis how durable it is."""
        from redis.exceptions import ResponseError

        await connection.on_connect()
        try:
            await connection.send_command(
                "CONFIG", "GET", "appendonly", "maxmemory-policy", check_health=False
            )
            reply = await connection.read_response()
        except ResponseError:
            # A managed Redis may not let clients read its configuration.
            self.problems = ["its durability could not be checked (CONFIG GET was refused)"]
            return
        self.problems = _durability_problems(reply)

    async def create(self, record: TaskRecord, *, max_live: int = 0) -> None:
        if self.problems and not self.volatile_ok:
            raise StoreVolatile(self.problems)
        record.version = 0
        created = await self._call(
            "create",
            self._create(
                keys=[self._task_key(record.task_id), *self._index_keys(record.principal)],
                args=[
                    record.to_json(),
                    record.expires_at_ms,
                    record.task_id,
                    now_ms(),
                    record.created_at_ms,
                    max_live,
                ],
            ),
        )
        if created == -1:
            raise TooManyTasks(max_live)
        if not created:
            raise StoreUnavailable("task", "create (the task id exists)")

    async def get(self, task_id: str) -> TaskRecord | None:
        found = await self._call(
            "get", self._redis.hmget(self._task_key(task_id), "version", "data")
        )
        version, data = found
        if version is None or data is None:
            return None
        return TaskRecord.from_json(data, int(version))

    async def list_page(
        self, principal: str, after: ListKey | None, limit: int
    ) -> tuple[list[TaskRecord], bool]:
        """Read the index in creation order, batch by batch, until `limit` + 1 live tasks.

        Ids whose task expired are skipped (the next creation drops them from the index);
        only the first `limit` tasks found are parsed, the one after says more follow.
        """
        index = self._index_keys(principal)[0]
        low = "-inf" if after is None else after[0]
        found: list[tuple[bytes, bytes]] = []
        offset = 0
        while len(found) <= limit:
            batch = await self._call(
                "list",
                self._redis.zrangebyscore(
                    index, low, "+inf", start=offset, num=limit + 1, withscores=True
                ),
            )
            if not batch:
                break
            offset += len(batch)
            ids = [
                member.decode()
                for member, score in batch
                if after is None or (int(score), member.decode()) > after
            ]
            pipe = self._redis.pipeline(transaction=False)
            for task_id in ids:
                pipe.hmget(self._task_key(task_id), "version", "data")
            rows = await self._call("list", pipe.execute()) if ids else []
            found += [(v, d) for v, d in rows if v is not None and d is not None]
        page = [TaskRecord.from_json(data, int(version)) for version, data in found[:limit]]
        return page, len(found) > limit

    async def _compare_and_set(self, record: TaskRecord) -> bool:
        saved = await self._call(
            "update",
            self._cas(
                keys=[self._task_key(record.task_id)],
                args=[record.version, record.version + 1, record.to_json()],
            ),
        )
        return bool(saved)

    async def claim_once(self, key: str, ttl_s: float) -> bool:
        claimed = await self._call(
            "once",
            self._redis.set(
                f"{self.prefix}:once:{key}", b"1", nx=True, px=max(1, int(ttl_s * 1000))
            ),
        )
        return bool(claimed)

    async def epoch(self, *, create: bool = False) -> str | None:
        key = f"{self.prefix}:epoch"
        if create:
            # Set once per life of the data: a Redis restarted empty gets a new one.
            # Part of creating a task: a Redis too full for it is full "during create".
            await self._call("create", self._redis.set(key, secrets.token_hex(4), nx=True))
        found = await self._call("epoch", self._redis.get(key))
        if found is None:
            return None
        epoch = _text(found)
        if epoch not in self.epochs_seen:
            self.epochs_seen |= {epoch}  # a new one only when Redis lost its data
        return epoch

    async def durability_problems(self) -> list[str]:
        """What in this Redis's configuration could lose an acknowledged task, as its
        latest connection found it (one is opened if none is)."""
        await self._call("check", self._redis.ping())
        return list(self.problems or [])

    async def sweep(self) -> int:
        """Nothing to do: Redis expires each task's key at the end of its TTL."""
        return 0

    async def close(self) -> None:
        # The client was given its pool: it closes the pool's connections only when told.
        await self._redis.aclose(close_connection_pool=True)


def _durability_problems(reply: Any) -> list[str]:
    """What a `CONFIG GET appendonly maxmemory-policy` reply says could lose a task.

    Without an append-only file a restart forgets every task; with an eviction policy other
    than `noeviction` a full Redis drops tasks to make room. Both are silent.
    """
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
    settings = {_text(k): _text(v) for k, v in pairs}
    problems = []
    if settings.get("appendonly") != "yes":
        problems.append("appendonly is not yes (a restart would forget every task)")
    policy = settings.get("maxmemory-policy", "noeviction")
    if policy != "noeviction":
        problems.append(f"maxmemory-policy is {policy} (a full Redis would evict tasks)")
    return problems


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value

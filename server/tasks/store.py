"""The task store: where persistent tools keep their tasks between requests.

A task outlives the request that created it, so whatever replica serves the next
`tasks/get` or `tasks/update` must find it. That is the price of a persistent tool, and the
seed is candid about it: a store every replica can reach. Two implementations sit behind
one small interface:

- `InProcessTaskStore`: a dictionary in this replica. Enough for one replica and for
  tests; with two replicas behind a round-robin balancer, every other request is answered
  "task not found", which is exactly the failure the lab wants to show.
- `RedisTaskStore`: one hash per task in Redis, expiring with the task's TTL, so every
  replica sees every task.

Writes are compare-and-set on a version number (`update`), because the replica running a
task and the replica receiving the user's answer may write the same task at once. Store
failures raise `StoreUnavailable`, which the methods turn into JSON-RPC errors; every Redis
call has a timeout, so a dead store is an error, never a hang.
"""

from __future__ import annotations

import json
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from server.core.store import StoreUnavailable, bounded

#: Task statuses (the seed's and the extension's are the same five).
WORKING = "working"
INPUT_REQUIRED = "input_required"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds (task timestamps and expiry)."""
    return int(time.time() * 1000)


@dataclass
class TaskRecord:
    """Everything a replica needs to report on a task or to run its tool again.

    No coroutine survives between requests: a task waiting for input is its tool's name,
    arguments and caller, the answers collected so far and the tool's own checkpoint
    (`tool_state`). Any replica can re-run the handler from those, as MRTR does with
    requestState, only here the state lives on the server.
    """

    task_id: str
    principal: str
    tool: str
    arguments: dict[str, Any]
    client_capabilities: dict[str, Any]
    status: str
    created_at_ms: int
    updated_at_ms: int
    ttl_ms: int
    poll_interval_ms: int
    status_message: str | None = None
    #: Raw answers (entries of `inputResponses`) the tool has been given, by key.
    answers: dict[str, Any] = field(default_factory=dict)
    #: The handler's `ctx.state`, kept between runs.
    tool_state: dict[str, Any] = field(default_factory=dict)
    #: The questions still open while `input_required`, in `inputRequests` wire form.
    input_requests: dict[str, Any] = field(default_factory=dict)
    #: The tool's result once `completed`; the JSON-RPC error once `failed`.
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: Which run of the handler is current; a superseded run's outcome is discarded.
    run: int = 0
    #: The replica running the current run, and until when its claim holds unless renewed.
    #: A working task whose lease has lapsed lost its replica: any replica may take it over.
    runner: str = ""
    lease_until_ms: int = 0
    #: Compare-and-set counter, maintained by the store.
    version: int = 0

    @property
    def expires_at_ms(self) -> int:
        """When the task is forgotten: its creation plus its TTL."""
        return self.created_at_ms + self.ttl_ms

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def touch(self, status: str | None = None, message: str | None = None) -> None:
        """Record a change of status (and its message) now."""
        if status is not None:
            self.status = status
        self.status_message = message
        self.updated_at_ms = now_ms()

    def to_json(self) -> str:
        data = asdict(self)
        del data["version"]
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes, version: int) -> TaskRecord:
        return cls(**json.loads(text), version=version)


#: A change to a task: mutate the record given, return True to save it.
Change = Callable[[TaskRecord], bool]


class TaskStore(ABC):
    """Where tasks live; every method may raise `StoreUnavailable`."""

    @abstractmethod
    async def create(self, record: TaskRecord) -> None:
        """Store a new task; it is readable as soon as this returns."""

    @abstractmethod
    async def get(self, task_id: str) -> TaskRecord | None:
        """The task, or None if there is none (never created, or expired)."""

    @abstractmethod
    async def list_for(self, principal: str) -> list[TaskRecord]:
        """The principal's live tasks, oldest first."""

    @abstractmethod
    async def _compare_and_set(self, record: TaskRecord) -> bool:
        """Save `record` if the stored version is still `record.version`."""

    async def update(self, task_id: str, change: Change) -> tuple[TaskRecord | None, bool]:
        """Apply `change` atomically: (the task as it now stands, whether `change` saved).

        Optimistic: read, change a private copy, save if nobody wrote in between, else
        read again and retry. `change` may raise to abort; it sees the latest record.
        """
        while True:
            record = await self.get(task_id)
            if record is None:
                return None, False
            if not change(record):
                return record, False
            if await self._compare_and_set(record):
                record.version += 1
                return record, True

    @abstractmethod
    async def sweep(self) -> int:
        """Remove expired tasks; how many went."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""

    async def durability_problems(self) -> list[str]:
        """Settings under which this store could lose a task it acknowledged (none here:
        an in-process store is this replica's memory, and says so in its name)."""
        return []

    async def epoch(self, *, create: bool = False) -> str | None:
        """The name of this store's current life: it changes when the store loses its data.

        A task id carries the epoch it was created in, so a task missing from a store whose
        epoch has changed was lost with the store's data, not never there or someone
        else's. None where the store cannot tell (in process: it dies with the replica).
        `create` starts an epoch if there is none.
        """
        return None


class InProcessTaskStore(TaskStore):
    """Tasks in this replica's memory: one replica only, or tests."""

    def __init__(self) -> None:
        # Serialized like Redis, so both stores share one behaviour (copies, JSON only).
        self._tasks: dict[str, tuple[int, str, int, str]] = {}

    async def create(self, record: TaskRecord) -> None:
        record.version = 0
        self._tasks[record.task_id] = (0, record.to_json(), record.expires_at_ms, record.principal)

    async def get(self, task_id: str) -> TaskRecord | None:
        entry = self._tasks.get(task_id)
        if entry is None:
            return None
        version, text, expires_at_ms, _ = entry
        if expires_at_ms <= now_ms():
            del self._tasks[task_id]
            return None
        return TaskRecord.from_json(text, version)

    async def list_for(self, principal: str) -> list[TaskRecord]:
        ids = [tid for tid, entry in self._tasks.items() if entry[3] == principal]
        found = [r for r in [await self.get(tid) for tid in ids] if r is not None]
        return sorted(found, key=lambda r: r.created_at_ms)

    async def _compare_and_set(self, record: TaskRecord) -> bool:
        entry = self._tasks.get(record.task_id)
        if entry is None or entry[0] != record.version:
            return False
        self._tasks[record.task_id] = (
            record.version + 1,
            record.to_json(),
            entry[2],
            entry[3],
        )
        return True

    async def sweep(self) -> int:
        now = now_ms()
        expired = [tid for tid, entry in self._tasks.items() if entry[2] <= now]
        for tid in expired:
            del self._tasks[tid]
        return len(expired)

    async def close(self) -> None:
        """Nothing to release: the tasks go with the process."""


# A task is created only once, with its expiry, and indexed under its principal; the
# index expires with the principal's last task and is trimmed of expired ids on the way.
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'version', '0', 'data', ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[2], last[2])
return 1
"""
# Compare-and-set: write only if nobody wrote since we read. HSET keeps the key's TTL.
_COMPARE_AND_SET = """
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'data', ARGV[3])
return 1
"""


class RedisTaskStore(TaskStore):
    """Tasks in Redis, shared by every replica; each task's key expires with its TTL."""

    def __init__(self, url: str, *, timeout_s: float, prefix: str = "mrtr-lab") -> None:
        import redis.asyncio as redis_asyncio

        self.url = url
        self.timeout_s = timeout_s
        self.prefix = prefix
        self._redis = redis_asyncio.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
        self._create = self._redis.register_script(_CREATE)
        self._cas = self._redis.register_script(_COMPARE_AND_SET)

    def _task_key(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def _index_key(self, principal: str) -> str:
        return f"{self.prefix}:tasks-of:{principal}"

    async def _call(self, operation: str, command: Any) -> Any:
        """Await one Redis command within the store timeout (see `server.core.store`)."""
        from redis.exceptions import RedisError

        errors = (RedisError, OSError)
        return await bounded("task", operation, command, timeout_s=self.timeout_s, errors=errors)

    async def create(self, record: TaskRecord) -> None:
        record.version = 0
        created = await self._call(
            "create",
            self._create(
                keys=[self._task_key(record.task_id), self._index_key(record.principal)],
                args=[record.to_json(), record.expires_at_ms, record.task_id, now_ms()],
            ),
        )
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

    async def list_for(self, principal: str) -> list[TaskRecord]:
        ids = await self._call(
            "list", self._redis.zrangebyscore(self._index_key(principal), now_ms(), "+inf")
        )
        records = [await self.get(tid.decode()) for tid in ids]
        found = [r for r in records if r is not None and r.principal == principal]
        return sorted(found, key=lambda r: r.created_at_ms)

    async def _compare_and_set(self, record: TaskRecord) -> bool:
        saved = await self._call(
            "update",
            self._cas(
                keys=[self._task_key(record.task_id)],
                args=[record.version, record.version + 1, record.to_json()],
            ),
        )
        return bool(saved)

    async def epoch(self, *, create: bool = False) -> str | None:
        key = f"{self.prefix}:epoch"
        if create:
            # Set once per life of the data: a Redis restarted empty gets a new one.
            await self._call("epoch", self._redis.set(key, secrets.token_hex(4), nx=True))
        found = await self._call("epoch", self._redis.get(key))
        return None if found is None else _text(found)

    async def durability_problems(self) -> list[str]:
        """What in this Redis's configuration could lose an acknowledged task.

        Without an append-only file a restart forgets every task; with an eviction policy
        other than `noeviction` a full Redis drops tasks to make room. Both are silent.
        """
        found = await self._call("check", self._redis.config_get("appendonly", "maxmemory-policy"))
        settings = {_text(k): _text(v) for k, v in found.items()}
        problems = []
        if settings.get("appendonly") != "yes":
            problems.append("appendonly is not yes (a restart would forget every task)")
        policy = settings.get("maxmemory-policy", "noeviction")
        if policy != "noeviction":
            problems.append(f"maxmemory-policy is {policy} (a full Redis would evict tasks)")
        return problems

    async def sweep(self) -> int:
        """Nothing to do: Redis expires each task's key at the end of its TTL."""
        return 0

    async def close(self) -> None:
        await self._redis.aclose()


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def open_task_store(spec: str, *, timeout_s: float) -> TaskStore:
    """The store named by configuration: `memory`, or a `redis://` URL."""
    if spec == "memory":
        return InProcessTaskStore()
    return RedisTaskStore(spec, timeout_s=timeout_s)

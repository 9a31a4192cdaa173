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

import bisect
import itertools
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from server.core.store import StoreFull, StoreUnavailable

#: Task statuses (the seed's and the extension's are the same five).
WORKING = "working"
INPUT_REQUIRED = "input_required"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})


#: A task's place in its principal's list (`tasks/list`): (created_at_ms, task_id).
ListKey = tuple[int, str]


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
    def list_key(self) -> ListKey:
        """Where the task stands in its principal's list: creation time, then id."""
        return self.created_at_ms, self.task_id

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


class TooManyTasks(Exception):
    """A principal already has as many live tasks as the store may keep for one."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"too many live tasks for this principal (limit {limit})")
        self.limit = limit


class StoreVolatile(StoreUnavailable):
    """The task store could lose a task it acknowledged (no append-only file, or eviction):
    new tasks are refused until it is durable (or the replica is told to accept that)."""

    def __init__(self, problems: list[str]) -> None:
        Exception.__init__(self, "task store could lose tasks: " + "; ".join(problems))
        self.store = "task"
        self.operation = "create"
        self.problems = problems


class TaskStore(ABC):
    """Where tasks live; every method may raise `StoreUnavailable`."""

    #: Whether the store names the lives of its data (`epoch`); see there.
    has_epochs = False
    #: The epochs this replica has seen the store in (`epoch`): only a task id naming one
    #: of them can have been lost with the store's data; an id naming any other epoch was
    #: made up, and is not found.
    epochs_seen: frozenset[str] = frozenset()

    @abstractmethod
    async def create(self, record: TaskRecord, *, max_live: int = 0) -> None:
        """Store a new task; it is readable as soon as this returns.

        With `max_live` > 0, refuse it (`TooManyTasks`) when its principal already has that
        many tasks that have not expired.
        """

    @abstractmethod
    async def get(self, task_id: str) -> TaskRecord | None:
        """The task, or None if there is none (never created, or expired)."""

    @abstractmethod
    async def list_page(
        self, principal: str, after: ListKey | None, limit: int
    ) -> tuple[list[TaskRecord], bool]:
        """Up to `limit` of the principal's live tasks after `after`, oldest first, and
        whether more follow.

        Read from a per-principal index in creation order, so a page reads (and parses)
        only its own tasks, however many the principal has.
        """

    async def list_for(self, principal: str) -> list[TaskRecord]:
        """All the principal's live tasks, oldest first (page after page)."""
        found: list[TaskRecord] = []
        after: ListKey | None = None
        while True:
            page, more = await self.list_page(principal, after, 100)
            found += page
            if not more or not page:
                return found
            after = page[-1].list_key

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

    @abstractmethod
    async def claim_once(self, key: str, ttl_s: float) -> bool:
        """Claim `key` for `ttl_s` seconds in this store: True for the first claim only
        (`server.core.store.SingleUse`; the MRTR attempt's single-use states live here)."""

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


#: What a single-use claim's objects take in this process beyond its key's characters
#: (the string's header, its deadline, its slot in the dictionary).
CLAIM_OVERHEAD_BYTES = 128


class InProcessTaskStore(TaskStore):
    """Tasks in this replica's memory: one replica only, or tests.

    It keeps at most `max_bytes` of tasks (as JSON) and single-use claims (their keys); a
    write that would take it beyond raises `StoreFull`, as a Redis at its `maxmemory` does.
    """

    def __init__(self, *, max_bytes: int) -> None:
        # Serialized like Redis, so both stores share one behaviour (copies, JSON only).
        #: task id -> (version, JSON, expires_at_ms, principal, created_at_ms)
        self._tasks: dict[str, tuple[int, str, int, str, int]] = {}
        #: Each principal's tasks as sorted (created_at_ms, task_id): the list's index.
        self._index: dict[str, list[ListKey]] = {}
        self.max_bytes = max_bytes
        #: What the tasks' JSON adds up to (ASCII: one byte a character).
        self.stored_bytes = 0
        #: Single-use keys claimed, and when (monotonic) each may be forgotten.
        self._claims: dict[str, float] = {}
        self._next_claim_sweep = 0.0

    def _make_room(self, operation: str, more_bytes: int) -> None:
        if more_bytes > 0 and self.stored_bytes + more_bytes > self.max_bytes:
            raise StoreFull("task", operation)
        self.stored_bytes += more_bytes

    async def create(self, record: TaskRecord, *, max_live: int = 0) -> None:
        keys = self._index.setdefault(record.principal, [])
        if max_live and self._live(keys) >= max_live:
            raise TooManyTasks(max_live)
        text = record.to_json()
        self._make_room("create", len(text))
        record.version = 0
        self._tasks[record.task_id] = (
            0,
            text,
            record.expires_at_ms,
            record.principal,
            record.created_at_ms,
        )
        bisect.insort(keys, record.list_key)

    def _live(self, keys: list[ListKey]) -> int:
        now = now_ms()
        return sum(1 for _, tid in keys if tid in self._tasks and self._tasks[tid][2] > now)

    async def get(self, task_id: str) -> TaskRecord | None:
        entry = self._tasks.get(task_id)
        if entry is None:
            return None
        version, text, expires_at_ms, _, _ = entry
        if expires_at_ms <= now_ms():
            self._remove(task_id)
            return None
        return TaskRecord.from_json(text, version)

    async def list_page(
        self, principal: str, after: ListKey | None, limit: int
    ) -> tuple[list[TaskRecord], bool]:
        keys = self._index.get(principal, [])
        start = 0 if after is None else bisect.bisect_right(keys, after)
        now = now_ms()
        live = []
        for _, tid in itertools.islice(keys, start, None):
            if self._tasks[tid][2] > now:
                live.append(tid)
                if len(live) > limit:
                    break
        page = [r for r in [await self.get(tid) for tid in live[:limit]] if r is not None]
        return page, len(live) > limit

    async def _compare_and_set(self, record: TaskRecord) -> bool:
        entry = self._tasks.get(record.task_id)
        if entry is None or entry[0] != record.version:
            return False
        text = record.to_json()
        self._make_room("update", len(text) - len(entry[1]))
        self._tasks[record.task_id] = (record.version + 1, text, *entry[2:])
        return True

    async def sweep(self) -> int:
        now = now_ms()
        expired = [tid for tid, entry in self._tasks.items() if entry[2] <= now]
        for tid in expired:
            self._remove(tid)
        return len(expired)

    def _remove(self, task_id: str) -> None:
        _, text, _, principal, created_at_ms = self._tasks.pop(task_id)
        self.stored_bytes -= len(text)
        keys = self._index.get(principal, [])
        at = bisect.bisect_left(keys, (created_at_ms, task_id))
        if at < len(keys) and keys[at] == (created_at_ms, task_id):
            del keys[at]
        if not keys:
            self._index.pop(principal, None)

    async def claim_once(self, key: str, ttl_s: float) -> bool:
        now = time.monotonic()
        if now >= self._next_claim_sweep:
            # Expired claims go at most once a second, not on every claim.
            self._next_claim_sweep = now + 1.0
            kept = {k: until for k, until in self._claims.items() if until > now}
            gone = [k for k in self._claims if k not in kept]
            self.stored_bytes -= sum(len(k) + CLAIM_OVERHEAD_BYTES for k in gone)
            self._claims = kept
        until = self._claims.get(key)
        if until is not None and until > now:
            return False
        if until is None:
            # A claim takes room as a task does: many callers' confirmed rounds fill the
            # store's cap (full: 507), never the replica's memory.
            self._make_room("once", len(key) + CLAIM_OVERHEAD_BYTES)
        self._claims[key] = now + ttl_s
        return True

    async def close(self) -> None:
        """Nothing to release: the tasks go with the process."""

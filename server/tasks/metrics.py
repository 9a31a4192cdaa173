"""What `/metrics` shows about tasks: where they went, who took them over, what the store refused.

Counted per replica, at the replica that did it, so summing over replicas gives the
fleet's totals:

- `mcp_tasks_total{status}`: tasks this replica moved into each status (`working` on
  creation and on each resume, then `input_required`, `completed`, `failed`, `cancelled`);
- `mcp_task_takeovers_total`: tasks this replica resumed after their replica stopped
  renewing its lease;
- `mcp_task_store_errors_total{operation}`: task store operations that failed, timed
  out or found the store full (`create`, `get`, `list`, `update`, and `once`: a
  single-use state recorded, `server.mrtr.runner`);
- `mcp_task_runs`: task runs in progress on this replica now.

`MeteredTaskStore` wraps whichever store the replica uses, so every path that writes a
task (methods, creation, the worker) is counted without knowing about metrics.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from prometheus_client import Counter, Gauge

from server.core.metrics import ServerMetrics
from server.core.store import StoreUnavailable
from server.tasks.store import Change, ListKey, TaskRecord, TaskStore

T = TypeVar("T")


class TaskMetrics:
    """The task counters and gauges of one replica's registry."""

    def __init__(self, metrics: ServerMetrics, running: Callable[[], int]) -> None:
        registry = metrics.registry
        self.statuses = Counter(
            "mcp_tasks",
            "Tasks this replica moved into each status (working on creation and on resume)",
            ["status"],
            registry=registry,
        )
        self.takeovers = Counter(
            "mcp_task_takeovers",
            "Tasks this replica resumed after their replica stopped renewing its lease",
            registry=registry,
        )
        self.store_errors = Counter(
            "mcp_task_store_errors",
            "Task store operations that failed or timed out, by operation",
            ["operation"],
            registry=registry,
        )
        Gauge(
            "mcp_task_runs", "Task runs in progress on this replica", registry=registry
        ).set_function(running)


class MeteredTaskStore(TaskStore):
    """A task store that counts the status changes written through it and its failures."""

    def __init__(self, inner: TaskStore, metrics: TaskMetrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self.has_epochs = inner.has_epochs

    @property
    def epochs_seen(self) -> frozenset[str]:  # type: ignore[override]
        """The inner store's (it records them as it reads its epoch)."""
        return self.inner.epochs_seen

    async def _counted(self, operation: str, call: Awaitable[T]) -> T:
        try:
            return await call
        except StoreUnavailable:
            self.metrics.store_errors.labels(operation).inc()
            raise

    async def create(self, record: TaskRecord, *, max_live: int = 0) -> None:
        await self._counted("create", self.inner.create(record, max_live=max_live))
        self.metrics.statuses.labels(record.status).inc()

    async def get(self, task_id: str) -> TaskRecord | None:
        return await self._counted("get", self.inner.get(task_id))

    async def list_page(
        self, principal: str, after: ListKey | None, limit: int
    ) -> tuple[list[TaskRecord], bool]:
        return await self._counted("list", self.inner.list_page(principal, after, limit))

    async def update(self, task_id: str, change: Change) -> tuple[TaskRecord | None, bool]:
        before: list[str] = []

        def watched(record: TaskRecord) -> bool:
            before.append(record.status)  # the status this attempt of the change saw
            return change(record)

        stored, saved = await self._counted("update", self.inner.update(task_id, watched))
        if saved and stored is not None and stored.status != before[-1]:
            self.metrics.statuses.labels(stored.status).inc()
        return stored, saved

    async def _compare_and_set(self, record: TaskRecord) -> bool:
        return await self._counted("update", self.inner._compare_and_set(record))

    async def claim_once(self, key: str, ttl_s: float) -> bool:
        return await self._counted("once", self.inner.claim_once(key, ttl_s))

    async def sweep(self) -> int:
        return await self.inner.sweep()

    async def close(self) -> None:
        await self.inner.close()

    async def durability_problems(self) -> list[str]:
        return await self.inner.durability_problems()

    async def epoch(self, *, create: bool = False) -> str | None:
        # Part of creating a task, or of reading one: counted as that operation.
        return await self._counted("create" if create else "get", self.inner.epoch(create=create))

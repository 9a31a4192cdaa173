"""The task attempt: a tool call that may become a task, wrapping the MRTR attempt.

A task-supporting tool called by a client that opted in (the extension's capability, or
the seed's `params.task`) runs its ephemeral part through the attempt it wraps; when the
handler calls `ctx.become_task()` the request ends with a new task, stored before it is
announced, and this replica starts running it. Everything else passes straight through.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from server.core.call import Attempt, Call, Invocation
from server.core.catalog import Tool
from server.core.context import BecomeTask
from server.core.metrics import ServerMetrics
from server.core.store import StoreUnavailable
from server.protocol.jsonrpc import json_size, too_large, too_many_requests
from server.tasks.shapes import (
    EXTENSION,
    SEED,
    missing_tasks_capability,
    store_unavailable,
    task_id_in,
    wire_of,
    wire_task,
)
from server.tasks.store import WORKING, TaskRecord, TaskStore, TooManyTasks, now_ms
from server.tasks.worker import TaskWorker

#: The `taskSupport` values of a tool that may run as a task.
TASK_CAPABLE = frozenset({"optional", "required"})


class TaskAttempt:
    """Runs tool calls through `inner`, turning those that call `become_task` into tasks."""

    def __init__(
        self,
        inner: Attempt,
        store: TaskStore,
        worker: TaskWorker,
        *,
        default_ttl_ms: int,
        max_ttl_ms: int,
        poll_interval_ms: int,
        max_tasks_per_principal: int = 0,
        max_arguments_bytes: int,
        max_capabilities_bytes: int,
        metrics: ServerMetrics,
    ) -> None:
        self.inner = inner
        #: Where a refusal at a cap is counted (`mcp_stored_refusals`).
        self.metrics = metrics
        self.store = store
        self.worker = worker
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.poll_interval_ms = poll_interval_ms
        #: Live (unexpired) tasks one principal may keep in the store; 0: no limit.
        self.max_tasks_per_principal = max_tasks_per_principal
        #: What a task may keep of its caller (arguments, answers; capabilities) until it
        #: expires, up to a day.
        self.max_arguments_bytes = max_arguments_bytes
        self.max_capabilities_bytes = max_capabilities_bytes

    def __call__(self, call: Call, invocation: Invocation) -> Awaitable[dict[str, Any]]:
        """Run the invocation; a tool that becomes a task ends the request with the task.

        Not a coroutine itself: a call that cannot become a task (nearly every call) gets
        the inner attempt's awaitable as it is, without a coroutine of this layer around it.
        """
        tool = invocation.tool
        if tool is None or tool.task_support not in TASK_CAPABLE:
            return self.inner(call, invocation)  # a sync-only tool ignores a task hint
        support = tool.task_support
        wire = self._creation_wire(call)
        if wire is None:
            if support == "required":
                raise missing_tasks_capability()
            return self.inner(call, invocation)
        return self._may_become_task(call, invocation, tool, wire)

    async def _may_become_task(
        self, call: Call, invocation: Invocation, tool: Tool, wire: str
    ) -> dict[str, Any]:
        ephemeral = Invocation(
            invocation.handler, invocation.name, invocation.arguments, tool, may_become_task=True
        )
        try:
            return await self.inner(call, ephemeral)
        except BecomeTask as switch:
            self._check_sizes(call, invocation.arguments, switch.answers)
            try:
                record = await self._create(call, tool, invocation.arguments, switch)
            except StoreUnavailable as exc:
                raise store_unavailable(exc) from exc
            except TooManyTasks as exc:
                # Each task keeps its arguments and answers in the store until it expires.
                self.metrics.stored_refusals.labels("tasks", "tasks_per_principal").inc()
                raise too_many_requests(
                    f"Too many live tasks for this principal (limit {exc.limit}): "
                    "wait for one to expire (its ttl) before starting another",
                    exc.limit,
                ) from exc
        self.worker.start(record)
        if wire == SEED:
            return {"resultType": "task", "task": wire_task(record, SEED)}
        return {"resultType": "task", **wire_task(record, EXTENSION)}

    def _check_sizes(self, call: Call, arguments: dict[str, Any], answers: dict[str, Any]) -> None:
        """Refuse a task that would keep more of its caller than the limits allow."""
        for what, cap, value, limit in (
            ("the task's arguments", "arguments_bytes", arguments, self.max_arguments_bytes),
            ("the answers the task keeps", "answers_bytes", answers, self.max_arguments_bytes),
            (
                "the client capabilities the task keeps",
                "capabilities_bytes",
                call.client_capabilities,
                self.max_capabilities_bytes,
            ),
        ):
            size = json_size(value)
            if size > limit:
                self.metrics.stored_refusals.labels("tasks", cap).inc()
                raise too_large(what, size, limit)

    def _creation_wire(self, call: Call) -> str | None:
        """How the client asked for a task, if it did: the extension, or the seed's hint."""
        wire = wire_of(call.client_capabilities)
        if wire == EXTENSION:
            return EXTENSION  # the server decides; no hint needed
        if isinstance(call.message.params.get("task"), dict):
            return SEED  # the seed's opt-in: params.task
        return None

    def _ttl_ms(self, call: Call) -> int:
        hint = call.message.params.get("task")
        requested = hint.get("ttl") if isinstance(hint, dict) else None
        if isinstance(requested, int) and not isinstance(requested, bool) and requested > 0:
            return min(requested, self.max_ttl_ms)
        return self.default_ttl_ms

    async def _create(
        self, call: Call, tool: Tool, arguments: dict[str, Any], switch: BecomeTask
    ) -> TaskRecord:
        created = now_ms()
        record = TaskRecord(
            task_id=task_id_in(tool.name, await self.store.epoch(create=True)),
            principal=call.principal,
            tool=tool.name,
            arguments=arguments,
            client_capabilities=call.client_capabilities,
            status=WORKING,
            created_at_ms=created,
            updated_at_ms=created,
            ttl_ms=self._ttl_ms(call),
            poll_interval_ms=self.poll_interval_ms,
            status_message=switch.message or f"Task created for the {tool.name} tool call.",
            answers=switch.answers,
            tool_state=switch.state,
        )
        self.worker.lease(record)
        # Durable before it is announced: a tasks/get right after this must find it.
        await self.store.create(record, max_live=self.max_tasks_per_principal)
        return record

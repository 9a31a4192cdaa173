"""Persistent tools: the task methods, in the seed's form and in the released extension's.

A persistent tool does long work whose state the server keeps while it waits for the
user. The client starts it with `tools/call`; the server answers with a task and runs the
tool in the background (`server.tasks.worker`), keeping everything in the task store
(`server.tasks.store`) so that any replica can report on it or take the user's answer.

Two method sets share one store, chosen per request by what the client declares in
`_meta.io.modelcontextprotocol/clientCapabilities`:

- the released extension, `extensions["io.modelcontextprotocol/tasks"]` (SEP-2663):
  `tools/call` on a task-supporting tool returns a flat task (`resultType: "task"`,
  `ttlMs`, `pollIntervalMs`); `tasks/get` inlines `inputRequests`, `result` or `error`;
  `tasks/update {taskId, inputResponses}` answers; `tasks/cancel` acknowledges. There is
  no `requestState` on task messages, and no `tasks/result` or `tasks/list`.
- the seed's workflow (SEP-2322 on the v1 Tasks methods), declared with the v1 `tasks`
  capability: `tools/call` with `params.task: {ttl}` returns `{task: {...}}`;
  `tasks/get` reports the status; `tasks/result` returns the `inputRequests` (an
  `InputRequiredResult`) or the final result, with the related-task `_meta`;
  `tasks/input_response {inputResponses, _meta: {related-task: {taskId}}}` answers;
  `tasks/list` and `tasks/cancel`.

A client that declares neither gets `-32021` (missing capability) from every task method,
and task-supporting tools run synchronously for it (MRTR), unless the tool requires a
task. Tasks belong to the principal that created them: to anyone else they do not exist.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from server.core.call import Call, Method
from server.core.metrics import ServerMetrics
from server.core.store import StoreUnavailable
from server.protocol.headers import RELATED_TASK, TASKS_EXTENSION
from server.protocol.inputs import answers, input_responses
from server.protocol.jsonrpc import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    RpcError,
    invalid_params,
    json_size,
    too_large,
)
from server.tasks.result_wait import ResultWaits
from server.tasks.shapes import (
    EXTENSION,
    SEED,
    detailed_task,
    epoch_of,
    missing_tasks_capability,
    related_task,
    store_unavailable,
    well_formed,
    wire_of,
    wire_task,
)
from server.tasks.store import (
    CANCELLED,
    COMPLETED,
    FAILED,
    INPUT_REQUIRED,
    WORKING,
    TaskRecord,
    TaskStore,
)
from server.tasks.worker import TaskWorker


def _guarded(method: Method) -> Method:
    async def serve(call: Call) -> dict[str, Any]:
        try:
            return await method(call)
        except StoreUnavailable as exc:
            raise store_unavailable(exc) from exc

    return serve


class TaskMethods:
    """The task methods of one replica, over a store every replica may share."""

    def __init__(
        self,
        store: TaskStore,
        worker: TaskWorker,
        *,
        result_wait_s: float,
        max_result_waits_per_principal: int = 0,
        max_result_waits: int = 0,
        list_page_size: int = 50,
        anonymous: str | None = None,
        max_answers_bytes: int,
        metrics: ServerMetrics,
    ) -> None:
        #: Where a refusal at a cap is counted (`mcp_stored_refusals`).
        self.metrics = metrics
        self.store = store
        self.worker = worker
        self.result_wait_s = result_wait_s
        self.result_waits = ResultWaits(
            wait_s=result_wait_s,
            max_per_principal=max_result_waits_per_principal,
            max_total=max_result_waits,
            on_full=metrics.totals_reached.labels("task_result_waits").inc,
        )
        self.list_page_size = list_page_size
        #: The principal of callers without a token. They all share it, so their tasks are
        #: never listed: each is reachable only by its unguessable id.
        self.anonymous = anonymous
        #: The most a task's stored answers may add up to (they stay until it expires).
        self.max_answers_bytes = max_answers_bytes
        self.table: dict[str, Method] = {
            name: _guarded(method)
            for name, method in {
                "tasks/get": self.get,
                "tasks/update": self.update,
                "tasks/cancel": self.cancel,
                "tasks/result": self.result,
                "tasks/input_response": self.input_response,
                "tasks/list": self.list_tasks,
            }.items()
        }

    def extensions(self) -> dict[str, Any]:
        """The extensions these methods make the server declare in `server/discover`."""
        return {TASKS_EXTENSION: {}}

    # -- methods of both sets ---------------------------------------------------------

    async def get(self, call: Call) -> dict[str, Any]:
        """`tasks/get`: the task's status (and, in the extension, what it needs or made)."""
        wire = self._wire(call)
        record = await self._find(call, call.message.params.get("taskId"))
        task = wire_task(record, SEED) if wire == SEED else detailed_task(record)
        return {"resultType": "complete", **task}

    async def cancel(self, call: Call) -> dict[str, Any]:
        """`tasks/cancel`: stop the task; the extension acknowledges, the seed returns it."""
        wire = self._wire(call)
        task_id = call.message.params.get("taskId")
        record = await self._find(call, task_id)

        def change(task: TaskRecord) -> bool:
            if task.terminal:
                return False
            task.input_requests = {}
            task.touch(CANCELLED, "Cancelled by the client.")
            return True

        stored, cancelled = await self.store.update(record.task_id, change)
        if stored is None:
            raise _not_found(record.task_id)
        if cancelled:
            self.worker.stop(stored.task_id)
        if wire == EXTENSION:
            return {"resultType": "complete"}  # idempotent; the status shows on tasks/get
        if not cancelled:
            raise invalid_params(
                f"Task {stored.task_id} is already {stored.status}", {"taskId": stored.task_id}
            )
        return {"resultType": "complete", **wire_task(stored, SEED)}

    # -- the extension's methods -----------------------------------------------------

    async def update(self, call: Call) -> dict[str, Any]:
        """`tasks/update {taskId, inputResponses}`: answer the task's questions."""
        if self._wire(call) != EXTENSION:
            raise missing_tasks_capability()
        params = call.message.params
        await self._answer(call, params.get("taskId"), params.get("inputResponses"))
        return {"resultType": "complete"}

    # -- the seed's methods ------------------------------------------------------------

    async def result(self, call: Call) -> dict[str, Any]:
        """`tasks/result`: the open questions (input_required) or the final result.

        On a task still working, waits for it to need input or end, as the v1 method
        blocks, within the bounds of `server.tasks.result_wait`; the replica asks the
        store, not a coroutine it holds.
        """
        self._seed_only(call)
        found = await self._find(call, call.message.params.get("taskId"))
        record = await self.result_waits.settled(
            call, found, lambda: self._find(call, found.task_id)
        )
        meta = related_task(record.task_id)
        if record.status == INPUT_REQUIRED:
            return {
                "resultType": "input_required",
                "inputRequests": record.input_requests,
                "_meta": meta,
            }
        if record.status == COMPLETED:
            result = dict(record.result or {})
            result["_meta"] = {**(result.get("_meta") or {}), **meta}
            return {**result, "resultType": "complete"}
        if record.status == FAILED:
            error = record.error or {"code": INTERNAL_ERROR, "message": "Task failed"}
            raise RpcError(error["code"], error["message"], error.get("data"))
        if record.status == CANCELLED:
            raise invalid_params(f"Task {record.task_id} was cancelled", {"taskId": record.task_id})
        raise invalid_params(
            f"Task {record.task_id} is still working: poll tasks/get, then call tasks/result",
            {"taskId": record.task_id, "status": record.status},
        )

    async def input_response(self, call: Call) -> dict[str, Any]:
        """`tasks/input_response {inputResponses, _meta: {related-task}}`: answer; ack."""
        self._seed_only(call)
        params = call.message.params
        related = (params.get("_meta") or {}).get(RELATED_TASK)
        task_id = related.get("taskId") if isinstance(related, dict) else params.get("taskId")
        if not isinstance(task_id, str):
            raise invalid_params(f"tasks/input_response needs _meta[{RELATED_TASK}].taskId")
        record = await self._answer(call, task_id, params.get("inputResponses"))
        return {"resultType": "complete", "_meta": related_task(record.task_id)}

    async def list_tasks(self, call: Call) -> dict[str, Any]:
        """`tasks/list {cursor?}`: one page of the caller's live tasks, oldest first.

        The cursor names the last task of the previous page (its creation time and id),
        not a position, so tasks that expire between pages shift nothing: a page starts
        right after that task, wherever it now stands.
        """
        self._seed_only(call)
        after = page_after(call.message.params.get("cursor"))
        if call.principal == self.anonymous:
            return {"resultType": "complete", "tasks": []}
        page, more = await self.store.list_page(call.principal, after, self.list_page_size)
        result: dict[str, Any] = {
            "resultType": "complete",
            "tasks": [wire_task(r, SEED) for r in page],
        }
        if more and page:
            result["nextCursor"] = list_cursor(page[-1])
        return result

    # -- shared steps ------------------------------------------------------------------

    def _wire(self, call: Call) -> str:
        wire = wire_of(call.client_capabilities)
        if wire is None:
            raise missing_tasks_capability()
        return wire

    def _seed_only(self, call: Call) -> None:
        if self._wire(call) == EXTENSION:
            raise RpcError(
                METHOD_NOT_FOUND,
                f"Method not found: {call.message.method} is not part of {TASKS_EXTENSION}",
                http_status=404,
            )

    async def _find(self, call: Call, task_id: Any) -> TaskRecord:
        """The caller's task, or "not found" (also when it is someone else's).

        A working task whose replica died is taken over by this one on the way.
        """
        if not isinstance(task_id, str) or not task_id:
            raise invalid_params("taskId must be a non-empty string")
        if not well_formed(task_id):
            raise _not_found(task_id[:200])  # not one this server issued: no store to ask
        record = await self.store.get(task_id)
        if record is None and await self._lost_with_the_store(task_id):
            raise RpcError(
                INTERNAL_ERROR,
                f"Task store lost its data: task {task_id} was created before the store "
                "restarted empty; start the task again",
                {"taskId": task_id, "reason": "store_lost_data"},
                http_status=503,
            )
        if record is None or record.principal != call.principal:
            raise _not_found(task_id)
        current = await self.worker.take_over_if_abandoned(record)
        if current is None:
            raise _not_found(task_id)
        return current

    async def _lost_with_the_store(self, task_id: str) -> bool:
        """Whether a missing task was created in an earlier life of the store's data."""
        created_in = epoch_of(task_id)
        if created_in is None or not self.store.has_epochs:
            return False
        current = await self.store.epoch()
        # An id naming an epoch this replica never saw the store in was never issued from
        # it (a made-up id with a well-formed `.e` part): not found, not "lost".
        return created_in in self.store.epochs_seen and current != created_in

    async def _answer(self, call: Call, task_id: Any, responses: Any) -> TaskRecord:
        """Take the answers that fit open questions; resume the task when none is left.

        An answer of the wrong shape, or for a key nobody asked, is no answer: the task
        stays `input_required` and the question stays open.
        """
        responses = input_responses(responses)
        record = await self._find(call, task_id)

        def change(task: TaskRecord) -> bool:
            if task.status != INPUT_REQUIRED:
                raise invalid_params(
                    f"Task {task.task_id} is {task.status}, not waiting for input",
                    {"taskId": task.task_id, "status": task.status},
                )
            fitting = {
                key: responses[key]
                for key, asked in task.input_requests.items()
                if key in responses and answers(asked, responses[key])
            }
            if not fitting:
                return False
            task.answers.update(fitting)
            size = json_size(task.answers)
            if size > self.max_answers_bytes:
                self.metrics.stored_refusals.labels("tasks", "answers_bytes").inc()
                raise too_large("the answers this task keeps", size, self.max_answers_bytes)
            for key in fitting:
                del task.input_requests[key]
            if task.input_requests:
                task.touch(message=f"Waiting for {', '.join(task.input_requests)}.")
            else:
                task.run += 1
                self.worker.lease(task)
                task.touch(WORKING, "Resuming with the answers.")
            return True

        stored, changed = await self.store.update(record.task_id, change)
        if stored is None:
            raise _not_found(record.task_id)
        if changed and stored.status == WORKING:
            self.worker.start(stored)  # this replica runs the next step, whoever ran the last
        return stored


def list_cursor(record: TaskRecord) -> str:
    """The opaque `nextCursor` that resumes a listing after `record`."""
    key = json.dumps(list(record.list_key), separators=(",", ":"))
    return base64.urlsafe_b64encode(key.encode()).decode()


def page_after(cursor: Any) -> tuple[int, str] | None:
    """Where a `tasks/list` page starts: after the task a cursor names (None: from the top)."""
    if cursor is None:
        return None
    try:
        created_at_ms, task_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        if isinstance(created_at_ms, int) and isinstance(task_id, str):
            return created_at_ms, task_id
    except (AttributeError, ValueError, TypeError):
        pass
    raise invalid_params("Invalid cursor", {"cursor": cursor})


def _not_found(task_id: str) -> RpcError:
    return invalid_params(f"Task not found: {task_id}", {"taskId": task_id})

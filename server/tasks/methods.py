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

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from server.core.catalog import Handler, Tool
from server.core.context import BecomeTask
from server.core.methods import Call
from server.protocol.inputs import InputRequest
from server.protocol.jsonrpc import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    RpcError,
    invalid_params,
)
from server.tasks.store import (
    CANCELLED,
    COMPLETED,
    FAILED,
    INPUT_REQUIRED,
    WORKING,
    TaskRecord,
    TaskStore,
    TaskStoreError,
    now_ms,
)
from server.tasks.worker import TaskWorker

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: The two wire forms of the task methods.
SEED = "seed"
EXTENSION = "extension"

STATUS_MESSAGES = {
    SEED: {
        INPUT_REQUIRED: "Input required: call tasks/result to continue.",
        COMPLETED: "The task completed: call tasks/result for its result.",
    },
    EXTENSION: {
        INPUT_REQUIRED: "Input required: answer the inputRequests with tasks/update.",
        COMPLETED: "The task completed.",
    },
}


class Attempt(Protocol):
    """One ephemeral (MRTR) attempt of a handler, as `Methods` runs it."""

    def __call__(
        self,
        call: Call,
        handler: Handler,
        name: str,
        arguments: dict[str, Any],
        *,
        may_become_task: bool = False,
    ) -> Awaitable[dict[str, Any]]: ...


def wire_of(client_capabilities: dict[str, Any]) -> str | None:
    """Which task methods a request speaks: the extension, the seed's, or none."""
    extensions = client_capabilities.get("extensions")
    if isinstance(extensions, dict) and TASKS_EXTENSION in extensions:
        return EXTENSION
    if "tasks" in client_capabilities:
        return SEED
    return None


def missing_tasks_capability() -> RpcError:
    """The error for a task request from a client that declared no task support."""
    return RpcError(
        MISSING_CLIENT_CAPABILITY,
        f"Missing required client capability: extensions[{TASKS_EXTENSION}]",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
        http_status=400,
    )


def iso_time(epoch_ms: int) -> str:
    """An epoch-milliseconds time as ISO 8601 UTC, e.g. 2026-01-27T03:32:48.314Z."""
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def status_message(record: TaskRecord, wire: str) -> str | None:
    """What the task says about its status, worded for the method set in use."""
    return STATUS_MESSAGES[wire].get(record.status, record.status_message)


#: How each wire names a task's lifetime and poll interval (both in milliseconds).
_TIMING_FIELDS = {SEED: ("ttl", "pollInterval"), EXTENSION: ("ttlMs", "pollIntervalMs")}


def wire_task(record: TaskRecord, wire: str) -> dict[str, Any]:
    """A Task as `wire` shows it: the seed's (`ttl`, `pollInterval`) or the extension's."""
    ttl_field, poll_field = _TIMING_FIELDS[wire]
    task: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": iso_time(record.created_at_ms),
        "lastUpdatedAt": iso_time(record.updated_at_ms),
        ttl_field: record.ttl_ms,
        poll_field: record.poll_interval_ms,
    }
    message = status_message(record, wire)
    if message:
        task["statusMessage"] = message
    return task


def detailed_task(record: TaskRecord) -> dict[str, Any]:
    """The extension's `tasks/get` answer: the task plus what its status calls for."""
    task = wire_task(record, EXTENSION)
    if record.status == INPUT_REQUIRED:
        task["inputRequests"] = record.input_requests
    elif record.status == COMPLETED and record.result is not None:
        task["result"] = record.result
    elif record.status == FAILED and record.error is not None:
        task["error"] = record.error
    return task


def related_task(task_id: str) -> dict[str, Any]:
    """The seed's `_meta` entry tying a message to its task."""
    return {RELATED_TASK: {"taskId": task_id}}


def store_unavailable(exc: TaskStoreError) -> RpcError:
    """The JSON-RPC error for a store that failed or timed out."""
    return RpcError(INTERNAL_ERROR, f"Task store error: {exc}", http_status=503)


Method = Callable[[Call], Awaitable[dict[str, Any]]]


def _guarded(method: Method) -> Method:
    async def serve(call: Call) -> dict[str, Any]:
        try:
            return await method(call)
        except TaskStoreError as exc:
            raise store_unavailable(exc) from exc

    return serve


class TaskMethods:
    """The task methods of one replica, over a store every replica may share."""

    def __init__(
        self,
        store: TaskStore,
        worker: TaskWorker,
        *,
        default_ttl_ms: int,
        max_ttl_ms: int,
        poll_interval_ms: int,
        result_wait_s: float,
    ) -> None:
        self.store = store
        self.worker = worker
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.result_wait_s = result_wait_s
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

    # -- creation ---------------------------------------------------------------------

    async def call_tool(
        self, call: Call, tool: Tool, arguments: dict[str, Any], attempt: Attempt
    ) -> dict[str, Any]:
        """`tools/call`: synchronously (MRTR), or as a task when the tool and client agree.

        A task-supporting tool called by a client that opted in runs its ephemeral part
        first; when it calls `ctx.become_task()` the request ends with a new task.
        """
        wire = self._creation_wire(call, tool)
        if wire is None:
            if tool.task_support == "required":
                raise missing_tasks_capability()
            return await attempt(call, tool.handler, tool.name, arguments)
        try:
            return await attempt(call, tool.handler, tool.name, arguments, may_become_task=True)
        except BecomeTask as switch:
            try:
                record = await self._create(call, tool, arguments, switch)
            except TaskStoreError as exc:
                raise store_unavailable(exc) from exc
        self.worker.start(record)
        if wire == SEED:
            return {"resultType": "task", "task": wire_task(record, SEED)}
        return {"resultType": "task", **wire_task(record, EXTENSION)}

    def _creation_wire(self, call: Call, tool: Tool) -> str | None:
        if tool.task_support not in ("optional", "required"):
            return None  # a sync-only tool ignores a task hint
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
            task_id=f"{tool.name}_{uuid.uuid4()}",
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
        await self.store.create(record)
        return record

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

        On a task still working, waits (up to `result_wait_s`) for it to need input or end,
        as the v1 method blocks; the replica asks the store, not a coroutine it holds.
        """
        self._seed_only(call)
        record = await self._find(call, call.message.params.get("taskId"))
        deadline = asyncio.get_running_loop().time() + self.result_wait_s
        while record.status == WORKING and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(record.poll_interval_ms / 1000)
            record = await self._find(call, record.task_id)
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
            f"Task {record.task_id} is still working after {self.result_wait_s:g} s: "
            "poll tasks/get, then call tasks/result",
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
        """`tasks/list`: the caller's live tasks."""
        self._seed_only(call)
        records = await self.store.list_for(call.principal)
        return {"resultType": "complete", "tasks": [wire_task(r, SEED) for r in records]}

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
        record = await self.store.get(task_id)
        if record is None or record.principal != call.principal:
            raise _not_found(task_id)
        current = await self.worker.take_over_if_abandoned(record)
        if current is None:
            raise _not_found(task_id)
        return current

    async def _answer(self, call: Call, task_id: Any, responses: Any) -> TaskRecord:
        """Take the answers that fit open questions; resume the task when none is left.

        An answer of the wrong shape, or for a key nobody asked, is no answer: the task
        stays `input_required` and the question stays open.
        """
        if not isinstance(responses, dict) or not all(
            isinstance(v, dict) for v in responses.values()
        ):
            raise invalid_params("inputResponses must be an object mapping keys to result objects")
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
                if key in responses and _answers(asked, responses[key])
            }
            if not fitting:
                return False
            task.answers.update(fitting)
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


def _answers(asked: dict[str, Any], answer: Any) -> bool:
    """Whether `answer` answers the input request `asked` (wire form)."""
    return InputRequest(asked["method"], asked["params"]).parse(answer) is not None


def _not_found(task_id: str) -> RpcError:
    return invalid_params(f"Task not found: {task_id}", {"taskId": task_id})

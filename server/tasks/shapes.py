"""How tasks look on the wire, in the seed's form and in the released extension's.

Both forms share one store (`server.tasks.store`); only the shape of what the client
sees differs: which capability opts in, the names of the timing fields, where questions
and results travel, and what the status message says.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any

from server.core.store import StoreUnavailable, store_error
from server.protocol.headers import RELATED_TASK, TASKS_EXTENSION
from server.protocol.jsonrpc import MISSING_CLIENT_CAPABILITY, RpcError
from server.tasks.store import COMPLETED, FAILED, INPUT_REQUIRED, TaskRecord

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


#: Between a task id's unique part and the store epoch it was created in.
EPOCH_MARK = ".e"
#: A task id this server could have issued: the tool, a random UUID, maybe an epoch (the
#: Redis store's are eight hex digits).
TASK_ID = re.compile(
    r"(?s:.+)_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    r"(?:\.e(?P<epoch>[0-9a-f]{8}))?"
)


def task_id_in(tool: str, epoch: str | None) -> str:
    """A new, unguessable task id for `tool`, naming the store epoch when there is one."""
    unique = f"{tool}_{uuid.uuid4()}"
    return f"{unique}{EPOCH_MARK}{epoch}" if epoch else unique


def well_formed(task_id: str) -> bool:
    """Whether `task_id` has the form of the ids this server issues (any other is not found)."""
    return TASK_ID.fullmatch(task_id) is not None


def epoch_of(task_id: str) -> str | None:
    """The store epoch a well-formed task id was created in, or None when it names none."""
    found = TASK_ID.fullmatch(task_id)
    return found["epoch"] if found is not None else None


def related_task(task_id: str) -> dict[str, Any]:
    """The seed's `_meta` entry tying a message to its task."""
    return {RELATED_TASK: {"taskId": task_id}}


def store_unavailable(exc: StoreUnavailable) -> RpcError:
    """The JSON-RPC error for a store that failed, timed out, or is full."""
    return store_error(exc, "Task store error: ")

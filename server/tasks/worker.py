"""The background side of tasks on one replica: run a task's tool, record what came of it.

A run is one execution of the tool's handler from the top, with the answers and the
checkpoint (`ctx.state`) stored in the task, exactly as an MRTR retry re-runs a handler
with what requestState carried. It ends in one of three ways, each written to the store:

- the handler returns: the task is `completed` with that result (a tool that reports an
  error is still `completed`, with `isError`);
- the handler asks for something not yet answered: the task parks in `input_required`
  with the open `inputRequests`, and the run is over. Nothing waits in memory; when the
  answers arrive, at any replica, that replica starts the next run;
- the handler fails (a JSON-RPC error or a crash): the task is `failed` with the error.

Progress the handler reports (`ctx.progress`) becomes the task's `statusMessage`, and its
`ctx.state` is saved with it: a checkpoint. Each such write also notices a cancellation or
a newer run made elsewhere, and stops this run.

A run holds a lease on its task, renewed while it runs. If its replica dies, the lease
lapses, and the next replica to read the task takes it over: it starts a new run from the
last checkpoint. The store, not the replica, is what the task depends on. A write the store
refuses (an outage, a restart) ends the run the same way, never the task: its lease lapses
and the next reader, once the store is back, takes it over from the last checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from server.core.catalog import Catalog
from server.core.context import Caller, Context, InputRequired, MrtrChannel, Notify, Replica
from server.core.store import StoreUnavailable
from server.protocol.jsonrpc import INTERNAL_ERROR, RpcError, json_size
from server.tasks.store import (
    COMPLETED,
    FAILED,
    INPUT_REQUIRED,
    WORKING,
    TaskRecord,
    TaskStore,
    now_ms,
)

log = logging.getLogger("server.tasks")


class TaskChannel(MrtrChannel):
    """Answers stored in the task; a question without one parks the task in input_required."""

    can_offload = False

    def __init__(self, answers: dict[str, Any], client_capabilities: dict[str, Any]) -> None:
        super().__init__(answers, {}, client_capabilities)


class RunSuperseded(Exception):
    """This run no longer owns its task: cancelled, expired, or a newer run started."""


class TaskWorker:
    """Runs task handlers in the background on this replica."""

    def __init__(
        self,
        store: TaskStore,
        catalog: Catalog,
        replica: Replica,
        *,
        lease_s: float,
        max_result_bytes: int,
        on_takeover: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.replica = replica
        self.lease_s = lease_s
        #: The largest result a task keeps (it stays until the task expires, up to a day).
        self.max_result_bytes = max_result_bytes
        #: Called each time this replica takes a task over (the takeover metric).
        self.on_takeover = on_takeover
        self._running: dict[str, asyncio.Task[None]] = {}

    def lease(self, record: TaskRecord) -> None:
        """Claim `record`'s current run for this replica, for one lease period from now."""
        record.runner = self.replica.replica_id
        record.lease_until_ms = now_ms() + int(self.lease_s * 1000)

    async def take_over_if_abandoned(self, record: TaskRecord) -> TaskRecord | None:
        """Run here a working task whose replica stopped renewing its lease (it died).

        Returns the task as it now stands (None if it is gone). Only one replica wins the
        claim; the handler starts again from the task's last checkpoint.
        """
        if record.status != WORKING or record.lease_until_ms > now_ms():
            return record

        def claim(task: TaskRecord) -> bool:
            if task.status != WORKING or task.lease_until_ms > now_ms():
                return False
            previous = task.runner or "its replica"
            task.run += 1
            self.lease(task)
            task.touch(message=f"Resumed on {self.replica.replica_id}: {previous} stopped.")
            return True

        stored, claimed = await self.store.update(record.task_id, claim)
        if claimed and stored is not None:
            log.warning("task %s taken over from %s", stored.task_id, record.runner)
            self.on_takeover()
            self.start(stored)
        return stored

    @property
    def running(self) -> int:
        """How many task runs this replica has in progress."""
        return len(self._running)

    def start(self, record: TaskRecord) -> None:
        """Start the task's current run (`record.run`) in the background."""
        self.stop(record.task_id)
        job = asyncio.create_task(self._run(record.task_id, record.run))
        self._running[record.task_id] = job
        job.add_done_callback(lambda done: self._forget(record.task_id, done))

    def stop(self, task_id: str) -> None:
        """Stop the task's run if it is running here (a cancellation, say)."""
        job = self._running.pop(task_id, None)
        if job is not None:
            job.cancel()

    async def close(self) -> None:
        """Stop every run (shutdown); their tasks stay as the store last saw them."""
        jobs = list(self._running.values())
        self._running.clear()
        for job in jobs:
            job.cancel()
        for job in jobs:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await job

    def _forget(self, task_id: str, done: asyncio.Task[None]) -> None:
        if self._running.get(task_id) is done:
            del self._running[task_id]

    async def _run(self, task_id: str, run: int) -> None:
        try:
            record = await self.store.get(task_id)
            if record is None or record.run != run or record.status != WORKING:
                return
            job = asyncio.current_task()
            assert job is not None
            heartbeat = asyncio.create_task(self._keep_lease(task_id, run, job))
            try:
                outcome = await self._execute(record)
            finally:
                heartbeat.cancel()
            await self.store.update(task_id, _settle(run, outcome))
        except RunSuperseded:
            log.info("task %s run %d stopped: superseded", task_id, run)
        except StoreUnavailable:
            log.exception("task %s run %d stopped: the task store failed", task_id, run)

    async def _execute(self, record: TaskRecord) -> Callable[[TaskRecord], None]:
        """Run the handler once; returns how to record the outcome."""
        tool = self.catalog.tools.get(record.tool)
        if tool is None:
            error = RpcError(INTERNAL_ERROR, f"tool {record.tool!r} is not served here")
            return _failed(error.to_error())
        channel = TaskChannel(record.answers, record.client_capabilities)
        state = record.tool_state  # the handler's ctx.state: checkpointed with each progress
        caller = Caller(
            principal=record.principal,
            client_capabilities=record.client_capabilities,
            progress_token=record.task_id,
            notify=self._reporter(record.task_id, record.run, state),
        )
        ctx = Context(caller, record.arguments, self.replica, channel, state)
        try:
            result = await tool.handler(ctx)
        except InputRequired as asked:
            wire = {key: request.to_wire() for key, request in asked.requests.items()}
            return _parked(wire, ctx.state)
        except (RunSuperseded, StoreUnavailable):
            # A checkpoint the store refused is not the tool's failure: the run stops, its
            # lease lapses, and the next reader takes the task over from the last checkpoint.
            raise
        except RpcError as error:
            return _failed(error.to_error())
        except Exception:
            log.exception("task %s: tool %s crashed", record.task_id, record.tool)
            return _failed(RpcError(INTERNAL_ERROR, "Internal error in the tool").to_error())
        size, limit = json_size(result), self.max_result_bytes
        if size > limit:
            # Kept until the task expires: the tool's failure to keep it small, told as such.
            message = (
                f"the task's result is {size} bytes as JSON; this server keeps at most {limit}"
            )
            return _failed(RpcError(INTERNAL_ERROR, message, {"limit": limit}).to_error())
        return _completed(result)

    async def _keep_lease(self, task_id: str, run: int, job: asyncio.Task[None]) -> None:
        """Renew the run's lease while it runs; stop the run if it no longer owns the task."""

        def renew(record: TaskRecord) -> bool:
            if record.run != run or record.status != WORKING:
                raise RunSuperseded()
            self.lease(record)
            return True

        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                stored, _ = await self.store.update(task_id, renew)
            except RunSuperseded:
                stored = None
            except StoreUnavailable:
                continue  # try again; if the store stays away, the lease lapses
            if stored is None:
                job.cancel()
                return

    def _reporter(self, task_id: str, run: int, state: dict[str, Any]) -> Notify:
        """Where the handler's progress goes: the task's statusMessage, with a checkpoint."""

        async def report(message: dict[str, Any]) -> None:
            if message.get("method") != "notifications/progress":
                return
            params = message["params"]
            total = params.get("total")
            text = params.get("message") or (
                f"{params['progress']}/{total}" if total is not None else f"{params['progress']}"
            )

            def change(record: TaskRecord) -> bool:
                if record.run != run or record.status != WORKING:
                    raise RunSuperseded()
                record.touch(message=text)
                record.tool_state = state
                self.lease(record)
                return True

            stored, _ = await self.store.update(task_id, change)
            if stored is None:
                raise RunSuperseded()

        return report


def _settle(run: int, outcome: Callable[[TaskRecord], None]) -> Callable[[TaskRecord], bool]:
    """Record a run's outcome, unless the task moved on (cancelled, or a newer run)."""

    def change(record: TaskRecord) -> bool:
        if record.run != run or record.status != WORKING:
            return False
        outcome(record)
        return True

    return change


def _completed(result: dict[str, Any]) -> Callable[[TaskRecord], None]:
    def outcome(record: TaskRecord) -> None:
        record.result = {k: v for k, v in result.items() if k != "resultType"}
        record.touch(COMPLETED)

    return outcome


def _parked(input_requests: dict[str, Any], state: dict[str, Any]) -> Callable[[TaskRecord], None]:
    def outcome(record: TaskRecord) -> None:
        record.input_requests = input_requests
        record.tool_state = state
        record.touch(INPUT_REQUIRED)

    return outcome


def _failed(error: dict[str, Any]) -> Callable[[TaskRecord], None]:
    def outcome(record: TaskRecord) -> None:
        record.error = error
        record.touch(FAILED, error.get("message"))

    return outcome


async def sweep_periodically(store: TaskStore, interval_s: float) -> None:
    """Remove expired tasks every `interval_s` seconds, until cancelled."""
    while True:
        await asyncio.sleep(interval_s)
        try:
            removed = await store.sweep()
        except StoreUnavailable:
            log.warning("task sweep skipped: the task store failed")
            continue
        if removed:
            log.info("task sweep removed %d expired tasks", removed)

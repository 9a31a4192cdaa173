"""The task store: where simulated tasks live, what they cost it, and what an outage does.

A task outlives the request that created it, so it is kept where every replica can read
it: the shared store (Redis), under every architecture. The server's `RedisTaskStore`
(`server/tasks/store.py`) keeps one hash per task that expires with the task's TTL and
changes it by compare-and-set; this model counts the same commands and bytes, keeps the
task's status, checkpoint and lease, and knows when the task is gone: expired, or wiped by
an outage of a store that keeps nothing (Redis without persistence, restarted).

While the store is down every task operation fails after at most the store timeout (the
server bounds each call, so an outage is an error, never a hang); tasks acknowledged
before it stay as they were when `store_keeps_tasks` (Redis with its append-only file, or
a replicated store), and are all gone otherwise.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd
import simpy

from labsim.model.deployment import TaskParams

if TYPE_CHECKING:
    from labsim.model.call import Call
    from labsim.model.store import SharedStore

# Store commands per task operation, as the server's RedisTaskStore issues them.
CREATE_OPS = 1  # one script: HSET, PEXPIREAT and the principal's index
READ_OPS = 1  # HMGET version, data
UPDATE_OPS = 2  # a read, then the compare-and-set script

# Task statuses (the server's, less the ones no simulated call reaches).
WORKING = "working"
INPUT_REQUIRED = "input_required"
COMPLETED = "completed"

# How a task ended, from its client's side.
TASK_COMPLETED = "completed"
TASK_REJECTED = "rejected"  # never acknowledged: the store was down at creation
TASK_LOST = "lost"  # acknowledged, then wiped with the store
TASK_EXPIRED = "expired"  # acknowledged, then its TTL ran out before its client finished
TASK_ABANDONED = "abandoned"  # its user never answered
TASK_FAILED = "failed"  # its client gave up: no replica took its requests
TASK_OUTCOMES = (
    TASK_COMPLETED,
    TASK_REJECTED,
    TASK_LOST,
    TASK_EXPIRED,
    TASK_ABANDONED,
    TASK_FAILED,
)

# One row per task, in this order (see `Task.record`).
TASK_COLUMNS = (
    "call",
    "arrival_s",
    "created_s",
    "gone_s",
    "end_s",
    "outcome",
    "runs",
    "taken_over",
    "store_errors",
    "store_ops",
    "store_bytes",
    "polls",
    "wasted_work_s",
)


class Task:
    """One task as the store holds it, and what its client and its runs did with it.

    `run` numbers the current run of the handler (a takeover or an answer starts a new
    one, and an older run stops at its next write); `saved_steps` is the checkpoint, the
    steps of work the store knows are done; `lease_until_s` is when the current run's
    claim lapses unless renewed. `epoch` counts what the client could notice by polling
    (a status change, a lapsed lease, an outage), so that it polls only when there is
    something to see.
    """

    __slots__ = (
        "_waiter",
        "answered",
        "call",
        "created_s",
        "end_s",
        "epoch",
        "expires_s",
        "gone_s",
        "lease_until_s",
        "outcome",
        "polls",
        "questions",
        "run",
        "runs",
        "saved_steps",
        "status",
        "store_bytes",
        "store_errors",
        "store_ops",
        "taken_over",
        "wasted_work_s",
    )

    def __init__(self, call: Call) -> None:
        nan = float("nan")
        self.call = call
        # What the tool asks, round by round (question masks), set at creation.
        self.questions: tuple[int, ...] = ()
        self.created_s = self.expires_s = self.gone_s = self.end_s = nan
        self.lease_until_s = 0.0
        self.status = WORKING
        self.outcome = TASK_REJECTED
        self.run = self.runs = self.saved_steps = self.answered = 0
        self.taken_over = self.store_errors = self.store_ops = self.store_bytes = 0
        self.polls = 0
        self.wasted_work_s = 0.0
        self.epoch = 0
        self._waiter: simpy.Event | None = None

    def signal(self) -> None:
        """Something a poll would see has happened: wake the client if it waits."""
        self.epoch += 1
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.triggered:
            waiter.succeed()

    def waiter(self, env: simpy.Environment) -> simpy.Event:
        """An event that fires at the next `signal`."""
        self._waiter = env.event()
        return self._waiter

    def record(self) -> tuple:
        """The task's row for `TASK_COLUMNS`."""
        return (
            self.call.index,
            self.call.arrival_s,
            self.created_s,
            self.gone_s,
            self.end_s,
            self.outcome,
            self.runs,
            self.taken_over,
            self.store_errors,
            self.store_ops,
            self.store_bytes,
            self.polls,
            self.wasted_work_s,
        )


class TaskGone(Exception):
    """The task is not in the store any more: expired, or wiped by an outage."""


class TaskStoreDown(Exception):
    """The store did not answer within the store timeout."""


class TaskStore:
    """The tasks of one run, in the shared store: operations, bytes, outages, expiry."""

    def __init__(self, env: simpy.Environment, params: TaskParams, shared: SharedStore) -> None:
        self.env = env
        self.params = params
        self.shared = shared
        self.tasks: list[Task] = []  # every task, for the rows
        # Tasks whose client still follows them, in the order they were opened (a dict, so
        # that an outage wakes them in an order the seed fixes, not memory addresses).
        self.live: dict[Task, None] = {}
        shared.listeners.append(self._store_changed)

    @property
    def up(self) -> bool:
        """Whether the store answers."""
        return self.shared.up

    def open(self, call: Call) -> Task:
        """A task for `call`, followed by its client from now on (not yet in the store)."""
        task = Task(call)
        self.tasks.append(task)
        self.live[task] = None
        return task

    def close(self, task: Task, outcome: str) -> None:
        """The client stops following `task`; it ended with `outcome`."""
        task.outcome = outcome
        task.end_s = self.env.now
        self.live.pop(task, None)

    def create(self, task: Task, lease_s: float) -> None:
        """Store the task (acknowledged from now on), with a lease for its first run."""
        self._require_up(task)
        now = self.env.now
        task.created_s = now
        task.expires_s = now + self.params.ttl_s
        task.lease_until_s = now + lease_s
        self._count(task, CREATE_OPS, self.params.record_bytes)

    def read(self, task: Task) -> None:
        """One read of the task (tasks/get), or `TaskGone` / `TaskStoreDown`."""
        self._require_present(task)
        self._count(task, READ_OPS, self.params.record_bytes)

    def count_reads(self, task: Task, reads: int) -> None:
        """`reads` reads the client made while nothing changed (polls not simulated one by one)."""
        self._count(task, READ_OPS * reads, self.params.record_bytes * reads)

    def update(self, task: Task) -> None:
        """One compare-and-set change of the task, or `TaskGone` / `TaskStoreDown`."""
        self._require_present(task)
        self._count(task, UPDATE_OPS, 2 * self.params.record_bytes)

    def present(self, task: Task) -> bool:
        """Whether the task is still in the store (not expired, not wiped)."""
        if not math.isnan(task.gone_s):
            return False
        if self.env.now >= task.expires_s:
            task.gone_s = task.expires_s
            return False
        return True

    def _require_up(self, task: Task) -> None:
        if not self.shared.up:
            raise TaskStoreDown

    def _require_present(self, task: Task) -> None:
        self._require_up(task)
        if not self.present(task):
            raise TaskGone

    def _count(self, task: Task, ops: int, size_bytes: int) -> None:
        task.store_ops += ops
        task.store_bytes += size_bytes
        task.call.store_ops += ops

    def _store_changed(self, up: bool) -> None:
        """An outage or a recovery: wipe what a store without persistence loses; wake clients."""
        now = self.env.now
        for task in self.live:
            stored = not math.isnan(task.created_s) and self.present(task)
            if not up and not self.params.store_keeps_tasks and stored:
                task.gone_s = now
            task.signal()

    def stored_bytes_mean(self, t0: float, t1: float) -> float:
        """Time-average bytes of task records held in the store over [t0, t1]."""
        held_s = 0.0
        for task in self.tasks:
            if math.isnan(task.created_s):  # never stored
                continue
            gone = task.expires_s if math.isnan(task.gone_s) else task.gone_s
            lo, hi = max(task.created_s, t0), min(gone, t1)
            if hi > lo:
                held_s += hi - lo
        return held_s * self.params.record_bytes / (t1 - t0)


def tasks_frame(store: TaskStore, warmup_s: float, horizon_s: float) -> pd.DataFrame:
    """One row per task (`TASK_COLUMNS`), with the `measured` flag of its call."""
    frame = pd.DataFrame.from_records(
        [task.record() for task in store.tasks], columns=list(TASK_COLUMNS)
    )
    frame = frame.sort_values("call", kind="stable").reset_index(drop=True)
    frame["measured"] = (frame["arrival_s"] >= warmup_s) & (frame["arrival_s"] < horizon_s)
    return frame


def summarize_tasks(frame: pd.DataFrame, store: TaskStore, window: tuple[float, float]) -> dict:
    """Per-run task metrics: what became of the tasks, and what they cost the store."""
    measured = frame[frame["measured"]]
    outcomes = measured["outcome"].value_counts()
    return {
        "tasks_started": int(measured["created_s"].notna().sum()),
        **{f"tasks_{outcome}": int(outcomes.get(outcome, 0)) for outcome in TASK_OUTCOMES},
        "tasks_taken_over": int(measured["taken_over"].sum()),
        "task_store_errors": int(measured["store_errors"].sum()),
        "task_store_ops": int(measured["store_ops"].sum()),
        "task_store_bytes": int(measured["store_bytes"].sum()),
        "task_polls": int(measured["polls"].sum()),
        "task_wasted_work_s": float(measured["wasted_work_s"].sum()),
        "task_stored_bytes_mean": store.stored_bytes_mean(*window),
    }

"""Persistent tools: calls that run as tasks, with leases, takeover, TTL and store outages.

The seed's second workflow. The client's `tools/call` creates a task in the shared store
and returns at once; a replica runs the tool in the background, in steps, saving a
checkpoint at each step and renewing its lease every third of the lease; the client polls
`tasks/get` every poll interval. A tool that needs input parks the task in
`input_required` (nothing waits in memory); the user's answer, sent to whatever replica
the load balancer picks (`tasks/update`), starts the next run there. The same flow serves
every architecture: a task lives in the store whether the other calls use MRTR or a held
SSE stream, so MRTR pays for a store only for its persistent share.

What goes wrong, as in the server (`server/tasks/worker.py`, `server/tasks/methods.py`):

- the replica running a task dies: its lease lapses, and the next replica a poll reaches
  claims the task and runs it again from its last checkpoint (a takeover); the work since
  that checkpoint is done twice;
- the store is down: every request that needs it is an error after at most the store
  timeout, never a hang. A run whose checkpoint cannot be written stops, and is taken
  over once the store is back; clients keep polling (and keep the user's answer) until
  it is; a creation is refused, and the client retries as for any 503. What the store
  held survives if it keeps its data (`store_keeps_tasks`); otherwise every task in it is
  lost;
- the task outlives its TTL: it expires from the store, and its client's next request
  finds nothing.

Polls are many and uneventful, so they are not simulated one by one: a client sleeps
until something a poll would see happens (a status change, a lapsed lease, an outage or a
recovery), polls at the next tick of its poll interval, and the polls in between are
counted (store reads, bytes, replica CPU) as if made.

This module is the client's side; the runs of the handler on the replicas, the server's
side, are in `labsim.model.architectures.task_runs`.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING

import simpy

from labsim.model.architectures.task_runs import TaskRuns
from labsim.model.metrics import ABANDONED, COMPLETED, FAILED, LOST
from labsim.model.params import SimParams
from labsim.model.task_store import (
    COMPLETED as TASK_DONE,
)
from labsim.model.task_store import (
    INPUT_REQUIRED,
    TASK_ABANDONED,
    TASK_COMPLETED,
    TASK_EXPIRED,
    TASK_FAILED,
    TASK_LOST,
    TASK_REJECTED,
    WORKING,
    Task,
    TaskGone,
    TaskStore,
    TaskStoreDown,
)

if TYPE_CHECKING:
    from labsim.model.architectures.base import Architecture
    from labsim.model.call import Call
    from labsim.model.cluster import Replica

# What a poll or an answer found, besides a task status.
_DOWN = "store-down"
_GONE = "gone"
_GAVE_UP = "gave-up"


class PersistentTools:
    """The tool calls that run as tasks, on a cluster shared with an architecture's calls."""

    def __init__(
        self,
        env: simpy.Environment,
        params: SimParams,
        architecture: Architecture,
        store: TaskStore,
    ) -> None:
        self.env = env
        self.params = params
        self.tasks = params.tasks
        self.architecture = architecture
        self.cluster = architecture.cluster
        self.store = store
        self.overhead_s = params.workload.request_overhead_s
        self.runs = TaskRuns(env, params.tasks, store, architecture)

    def start(self, call: Call) -> None:
        """A call to a persistent tool arrives: it is in flight until its client is done."""
        self.cluster.in_flight.move(self.env.now, 1)
        self.env.process(self.call(call))

    # -- the client's side -------------------------------------------------------------

    def call(self, call: Call) -> Generator[simpy.Event, object, None]:
        """The SimPy process of one task, from `tools/call` to the result (or the end)."""
        env = self.env
        answer_timeout_s = self.params.client.answer_timeout_s
        task = self.store.open(call)
        replica = yield from self._create(task)
        if replica is None:
            self._end(task, TASK_REJECTED)
            return
        task.questions = call.spec.round_masks(replica.version)
        self.runs.claim(task, replica)
        while True:
            status = yield from self._follow(task)
            if status == TASK_DONE:
                self._end(task, TASK_COMPLETED)
                return
            if status != INPUT_REQUIRED:
                self._end(task, self._why_not(task, status))
                return
            questions = task.questions[task.answered]
            think_s = call.draw_think_s(questions.bit_count())
            if think_s >= answer_timeout_s:
                yield env.timeout(answer_timeout_s)
                call.think_s += answer_timeout_s
                self._end(task, TASK_ABANDONED)
                return
            yield env.timeout(think_s)
            call.think_s += think_s
            self.architecture.answer(call, questions)
            sent = yield from self._answer(task)
            if sent != WORKING:
                self._end(task, self._why_not(task, sent))
                return

    def _why_not(self, task: Task, found: str) -> str:
        if found == _GAVE_UP:
            return TASK_FAILED
        return TASK_EXPIRED if task.gone_s == task.expires_s else TASK_LOST

    def _end(self, task: Task, outcome: str) -> None:
        self.store.close(task, outcome)
        call_outcome = {
            TASK_COMPLETED: COMPLETED,
            TASK_ABANDONED: ABANDONED,
            TASK_REJECTED: FAILED,
            TASK_FAILED: FAILED,
        }.get(outcome, LOST)
        self.architecture.finish(task.call, call_outcome)

    def _request(
        self, call: Call, request_bytes: int
    ) -> Generator[simpy.Event, object, Replica | None]:
        """One request of the task's client through the balancer; the replica, or None."""
        architecture = self.architecture
        replica = architecture.take(call) or (yield from architecture.retry_until_taken(call))
        if replica is None:
            return None
        if call.first_replica < 0:
            call.first_replica = replica.index
        call.bytes_in += request_bytes
        call.bytes_out += self.tasks.poll_response_bytes
        try:
            yield from architecture.execute(call, replica, self.overhead_s, False)
        finally:
            replica.release()
        return replica

    def _create(self, task: Task) -> Generator[simpy.Event, object, Replica | None]:
        """`tools/call` with a task: the replica that stored it, or None if it never was."""
        call = task.call
        while True:
            replica = yield from self._request(call, call.request_bytes)
            if replica is None:
                return None
            try:
                self.store.create(task, self.tasks.lease_s)
            except TaskStoreDown:
                task.store_errors += 1
                yield self.env.timeout(self.tasks.store_timeout_s)
                delay = self.architecture.back_off(call)
                if delay is None:
                    return None
                yield self.env.timeout(delay)
                continue
            return replica

    def _follow(self, task: Task) -> Generator[simpy.Event, object, str]:
        """Poll until the task is no longer working; its status, or why polling stopped."""
        env = self.env
        interval_s = self.tasks.poll_interval_s
        origin = env.now  # the poll interval's ticks count from here
        counted = 0  # ticks whose polls are already counted
        seen = -1  # the task's epoch at the last poll
        while True:
            if task.epoch == seen:
                yield task.waiter(env)
            tick = max(counted + 1, math.ceil((env.now - origin) / interval_s - 1e-9))
            at_s = origin + tick * interval_s
            if at_s > env.now:
                yield env.timeout(at_s - env.now)
            self._quiet_polls(task, tick - counted - 1)
            counted = tick
            seen = task.epoch
            found = yield from self._poll(task)
            if found == _DOWN:
                # A clear error: poll again at the next tick until the store answers.
                origin, counted, seen = env.now, 0, -1
                continue
            if found != WORKING:
                return found

    def _poll(self, task: Task) -> Generator[simpy.Event, object, str]:
        """One `tasks/get`; a replica that finds the lease lapsed takes the task over."""
        replica = yield from self._request(task.call, self.tasks.poll_request_bytes)
        if replica is None:
            return _GAVE_UP
        task.polls += 1
        try:
            self.store.read(task)
        except TaskStoreDown:
            task.store_errors += 1
            yield self.env.timeout(self.tasks.store_timeout_s)
            return _DOWN
        except TaskGone:
            return _GONE
        if task.status == WORKING and task.lease_until_s <= self.env.now:
            # Its replica stopped renewing the lease: this one claims the task.
            self.store.update(task)
            task.taken_over += 1
            self.runs.claim(task, replica)
        return task.status

    def _quiet_polls(self, task: Task, polls: int) -> None:
        """Count `polls` polls that found nothing new: store reads, bytes, replica CPU."""
        if polls <= 0:
            return
        call = task.call
        task.polls += polls
        call.bytes_in += polls * self.tasks.poll_request_bytes
        call.bytes_out += polls * self.tasks.poll_response_bytes
        self.store.count_reads(task, polls)
        cookie = call.session.cookie
        if self.architecture.sticky and cookie is not None and cookie.accepts_cookie():
            replicas = [cookie]
        else:
            replicas = self.cluster.routable
        if replicas:
            share_s = polls * self.overhead_s / len(replicas)
            for replica in replicas:
                self.architecture._account(call, replica, share_s)

    def _answer(self, task: Task) -> Generator[simpy.Event, object, str]:
        """The user's answer (`tasks/update`); the replica that takes it runs the next step."""
        env = self.env
        while True:
            replica = yield from self._request(task.call, task.call.request_bytes)
            if replica is None:
                return _GAVE_UP
            try:
                self.store.read(task)
                self.store.update(task)
            except TaskStoreDown:
                # A clear error: the client keeps the answer and sends it again.
                task.store_errors += 1
                yield env.timeout(self.tasks.store_timeout_s + self.tasks.poll_interval_s)
                continue
            except TaskGone:
                return _GONE
            task.answered += 1
            task.status = WORKING
            self.runs.claim(task, replica)
            return WORKING

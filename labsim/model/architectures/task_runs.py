"""The server's side of persistent tools: each run of a task's handler on a replica.

A run claims the task with a lease, reads it, works on from its checkpoint in steps,
saving a checkpoint at each step and renewing the lease every third of it, and ends
when the task parks in `input_required` or completes (`labsim.model.task_store`). A run
that dies (its replica cut, or a write refused by a store that is down) stops renewing
its lease; once the lease lapses, the next poll of the task's client sees it and a
replica takes the task over (`labsim.model.architectures.persistent`, the client's
side). A run that finds a newer run of its task, or no task, stops at its next write.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import simpy
from simpy import Interrupt

from labsim.model.task_store import (
    COMPLETED,
    INPUT_REQUIRED,
    WORKING,
    Task,
    TaskGone,
    TaskStore,
    TaskStoreDown,
)

if TYPE_CHECKING:
    from labsim.model.architectures.base import Architecture
    from labsim.model.cluster import Replica
    from labsim.model.deployment import TaskParams

# How a run ended.
_FINISHED = "finished"  # parked or completed: its outcome is in the store
_DIED = "died"  # cut with its replica, or its store write failed: its lease will lapse
_STOPPED = "stopped"  # superseded by a newer run, or the task is gone


class _Superseded(Exception):
    """The run no longer owns its task (a newer run, or the task is gone)."""


class _RunDied(Exception):
    """A write of the run failed: the store is down."""


class TaskRuns:
    """The runs of tasks' handlers on the replicas, each a SimPy process of its own."""

    def __init__(
        self,
        env: simpy.Environment,
        params: TaskParams,
        store: TaskStore,
        architecture: Architecture,
    ) -> None:
        self.env = env
        self.params = params
        self.store = store
        # The replicas' work is queued and accounted as the architecture's calls are.
        self.architecture = architecture

    def claim(self, task: Task, replica: Replica) -> None:
        """Start a new run of the task on `replica`, with a fresh lease."""
        task.run += 1
        task.lease_until_s = self.env.now + self.params.lease_s
        self.env.process(self._run(task, replica, task.run))

    def _run(self, task: Task, replica: Replica, run: int) -> Generator[simpy.Event, object, None]:
        """One run of the task's handler on `replica`, in the background."""
        process = self.env.active_process
        assert process is not None  # this generator runs as a SimPy process
        replica.attach(process)
        ended = yield from self._work(task, replica, run)
        replica.detach(process)
        if ended == _DIED:
            # Nobody renews the lease now; once it lapses a poll would see it.
            wait_s = task.lease_until_s - self.env.now
            if wait_s > 0:
                yield self.env.timeout(wait_s)
            if task.run == run:
                task.signal()
        elif ended == _STOPPED and not self.store.present(task):
            task.signal()

    def _work(self, task: Task, replica: Replica, run: int) -> Generator[simpy.Event, object, str]:
        """Read the task, run the handler's round, then its steps; how the run ended."""
        try:
            self.store.read(task)
        except TaskStoreDown:
            return _DIED
        except TaskGone:
            return _STOPPED
        if task.run != run:
            return _STOPPED
        call = task.call
        started_s = self.env.now
        try:
            yield from self.architecture.execute(call, replica, call.round_cpu_s(task.runs), False)
        except Interrupt:
            task.wasted_work_s += self.env.now - started_s
            return _DIED
        task.runs += 1
        call.rounds += 1
        return (yield from self._steps(task, run, started_s))

    def _steps(
        self, task: Task, run: int, checkpoint_s: float
    ) -> Generator[simpy.Event, object, str]:
        """The handler's steps from the task's checkpoint, a checkpoint written at each,
        until the task parks for the next answer or completes; how the run ended.

        `checkpoint_s` is when the run's last saved progress was made: the work since
        then is lost if the run dies.
        """
        env = self.env
        per_segment = self.params.steps
        asked = len(task.questions)
        total = (asked + 1) * per_segment
        step_s = self.params.work_s / total
        next_renewal_s = env.now + self.params.lease_s / 3
        step = task.saved_steps
        try:
            while True:
                if step == total or (
                    task.answered < asked and step == (task.answered + 1) * per_segment
                ):
                    self._write(task, run)
                    task.saved_steps = step
                    task.status = COMPLETED if step == total else INPUT_REQUIRED
                    task.signal()
                    return _FINISHED
                # A progress report: the checkpoint, which also renews the lease.
                self._write(task, run)
                task.saved_steps = step
                checkpoint_s = env.now
                next_renewal_s = yield from self._step(task, run, step_s, next_renewal_s)
                step += 1
        except (Interrupt, _RunDied):
            task.wasted_work_s += env.now - checkpoint_s
            return _DIED
        except _Superseded:
            task.wasted_work_s += env.now - checkpoint_s
            return _STOPPED

    def _step(
        self, task: Task, run: int, step_s: float, next_renewal_s: float
    ) -> Generator[simpy.Event, object, float]:
        """One step of work, renewing the lease every third of it on the way; when the
        next renewal is due."""
        env = self.env
        renew_every_s = self.params.lease_s / 3
        end_s = env.now + step_s
        while env.now < end_s:
            yield env.timeout(min(end_s, next_renewal_s) - env.now)
            if env.now >= next_renewal_s:
                next_renewal_s += renew_every_s
                if self.store.up:  # a failed renewal is tried again; the lease may lapse
                    self._write(task, run)
        return next_renewal_s

    def _write(self, task: Task, run: int) -> None:
        """One write of the run (checkpoint, renewal, outcome); it renews the lease."""
        if task.run != run or task.status != WORKING:
            raise _Superseded
        try:
            self.store.update(task)
        except TaskGone:
            raise _Superseded from None
        except TaskStoreDown:
            raise _RunDied from None
        task.lease_until_s = self.env.now + self.params.lease_s

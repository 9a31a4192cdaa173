"""Worker slots: at most so many requests served at once, the rest waiting in line.

A replica's workers (one per vCPU) and the shared store's single command thread are
both a counter of busy slots and a first-in-first-out line of requests waiting for
one, like the tellers of a bank branch and the queue in front of them.
"""

from __future__ import annotations

import contextlib
from collections import deque

import simpy


class WorkerPool:
    """Worker slots (a replica's, or the store's one command thread): at most `capacity`
    requests served at once, the rest in line.

    What `simpy.Resource` does for this model, without a request object and an
    event per request: a request that finds a free worker takes it at once; one
    that does not waits in FIFO order, and a worker that frees up passes
    straight to the first in line.
    """

    __slots__ = ("capacity", "count", "env", "queue")

    def __init__(self, env: simpy.Environment, capacity: int) -> None:
        self.env = env
        self.capacity = capacity
        self.count = 0  # workers busy
        self.queue: deque[simpy.Event] = deque()  # requests waiting, first in line first

    def acquire(self) -> simpy.Event | None:
        """Take a worker: None if one was free, else an event that fires when one is handed over."""
        if self.count < self.capacity:
            self.count += 1
            return None
        waiting = self.env.event()
        self.queue.append(waiting)
        return waiting

    def release(self) -> None:
        """Give a worker back: to the first request in line, or to the pool."""
        if self.queue:
            self.queue.popleft().succeed()
        else:
            self.count -= 1

    def cancel(self, waiting: simpy.Event) -> None:
        """A request still in line gives up (its call was cut)."""
        with contextlib.suppress(ValueError):
            self.queue.remove(waiting)

    def leave(self, waiting: simpy.Event | None) -> bool:
        """A cut request leaves, `waiting` being what `acquire` gave it; True if it held a
        worker (handed over, perhaps this very instant), which goes back to the pool."""
        if waiting is None or waiting.triggered:
            self.release()
            return True
        self.cancel(waiting)
        return False

"""The shared store (Redis) that carries an elicitation answer to the waiting replica.

Under SSE + shared store, the replica holding a call subscribes to a channel
before it asks the user; the user's answer lands on whichever replica the load
balancer picks, which publishes it; the store delivers it to the subscriber.
Redis runs commands on one thread, so the store is a single server with a
short service time per command, behind a network round trip. When it is down,
nothing can subscribe and no answer gets through.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import simpy
from simpy import Interrupt

from labsim.model.deployment import StoreParams
from labsim.model.metrics import Recorder
from labsim.model.workers import WorkerPool


class StoreUnavailable(Exception):
    """The store cannot be reached: a subscription or an answer does not get through."""


class SharedStore:
    """A Redis instance: one command thread, a network round trip, up or down."""

    def __init__(self, env: simpy.Environment, params: StoreParams, recorder: Recorder) -> None:
        self.env = env
        self.params = params
        self.recorder = recorder
        self.thread = WorkerPool(env, 1)
        self.up = True
        # Told of every outage and recovery (the task store wakes the clients polling it).
        self.listeners: list[Callable[[bool], None]] = []

    def subscribe(self) -> simpy.Event:
        """Subscribe to the answer's channel before asking: one round trip, to wait for."""
        if not self.up:
            raise StoreUnavailable
        return self.env.timeout(self.params.round_trip_s)

    def publish(self) -> Generator[simpy.Event, object, None]:
        """Publish an answer: queue for the command thread, run, deliver to the subscriber."""
        if not self.up:
            raise StoreUnavailable
        thread = self.thread
        waiting = thread.acquire()
        try:
            if waiting is not None:
                yield waiting
            yield self.env.timeout(self.params.op_service_s)
        except Interrupt:
            thread.leave(waiting)
            raise
        thread.release()
        yield self.env.timeout(self.params.round_trip_s)
        if not self.up:
            raise StoreUnavailable

    def set_up(self, up: bool, detail: str = "") -> None:
        """Bring the store up or down, and note the event."""
        self.up = up
        self.recorder.event(self.env.now, "store-up" if up else "store-down", None, detail)
        for listener in self.listeners:
            listener(up)

"""SSE + shared store: the answer lands on any replica and crosses a store to the waiting one.

The load balancer is plain (round-robin by default), so the user's answer POST
reaches whichever replica it picks. That replica parses it and publishes it
to the store; the store delivers it to the replica holding the call, which
subscribed before asking. The store is one more thing to pay for and one more
thing that fails: while it is down no answer gets through, and every call
waiting on a user fails, while calls that ask nothing carry on.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import simpy

from labsim.model.architectures.legacy import HeldStream

if TYPE_CHECKING:
    from labsim.model.call import Call
    from labsim.model.cluster import Replica


#: The requests that open a legacy session: `initialize`, then `notifications/initialized`.
SESSION_REQUESTS = 2


class SseStore(HeldStream):
    """Legacy elicitation with the answer relayed through a shared store (Redis)."""

    name = "sse-store"
    uses_store = True

    def open_session(self, call: Call) -> None:
        """A user without a session sends `initialize` and its notification first (each
        arrival of an open-loop run is a user of its own). Behind a plain balancer each
        takes its turn of the round robin and a connection on the replica it reaches, left
        open for reuse: with two requests more per call the held streams land on the
        replicas less evenly than if the round robin turned on the calls and answers
        alone (measured live: docs/model.md). Their work, a request's overhead each, is
        not modelled."""
        session = call.session
        if session.opened:
            return
        session.opened = True
        for _ in range(SESSION_REQUESTS):
            replica = self.take(call)
            if replica is not None:
                replica.release()

    def before_asking(self, call: Call) -> simpy.Event | None:
        """Subscribe to the call's answer channel before sending the question."""
        call.store_ops += 1
        return self.store.subscribe()

    def deliver_answer(self, call: Call, holder: Replica) -> Generator[simpy.Event, object, float]:
        """The answer POST goes where the balancer sends it, then through the store; a
        replica at its connection limit (or none in rotation) refuses it."""
        yield from self.answer_post(call)
        # PUBLISH, then the holder's UNSUBSCRIBE once the answer is in.
        call.store_ops += self.store.params.ops_per_answer - 1
        yield from self.store.publish()
        return 0.0

"""Sticky load balancer: a cookie routes the answer back to the replica holding the call.

No store is needed: the load balancer inserts an affinity cookie on the first
response and routes every later request of the call to the same replica,
even while that replica drains (as HAProxy's cookie persistence does). The
price is affinity: a replica keeps whatever calls it happened to get, however
long their users think, and when it goes down every call it holds is lost.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import simpy

from labsim.model.architectures.legacy import AnswerRefused, HeldStream

if TYPE_CHECKING:
    from labsim.model.call import Call
    from labsim.model.cluster import Replica


class Sticky(HeldStream):
    """Legacy elicitation behind a cookie-sticky load balancer."""

    name = "sticky"
    sticky = True

    def deliver_answer(self, call: Call, holder: Replica) -> Generator[simpy.Event, object, float]:
        """The cookie brings the answer POST to the holder: a request of its own, which
        queues for the holder's worker like any other (and the held call, woken by it,
        queues again for its next round).

        The holder takes it only below its connection limit. A holder its health checks
        took out of rotation gets no request: the balancer sends the answer to another
        replica, which holds no such call. Either way the answer is refused.
        """
        receiver = yield from self.answer_post(call)
        if receiver is not holder:
            raise AnswerRefused
        return 0.0

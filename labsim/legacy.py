"""The 2025-11-25 way of asking a user: one tool call held open on an SSE stream.

The client POSTs `tools/call`; the replica the load balancer picked answers
with an SSE stream, sends `elicitation/create` on it and waits, keeping the
call's memory and the stream while the user thinks. The user's answer is a
separate POST that has to reach that replica: through a shared store
(`labsim.sse_store`) or by a sticky load balancer (`labsim.sticky`), the two
subclasses. Whatever cuts the stream (a crash, the end of a drain, the load
balancer's idle timeout) loses the call: the client starts it again and the
user is asked again for everything they had already answered.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Generator
from typing import TYPE_CHECKING

import simpy
from simpy import Interrupt

from labsim.architecture import Architecture, Call, Shed
from labsim.metrics import ABANDONED, COMPLETED, FAILED, LOST
from labsim.store import StoreUnavailable

if TYPE_CHECKING:
    from labsim.cluster import Replica

_REJECTED = "rejected"  # an attempt ended by a 503: the client backs off and starts again


def _bits(mask: int) -> list[int]:
    """The single-question masks of `mask`, lowest first."""
    return [1 << k for k in range(mask.bit_length()) if mask >> k & 1]


class CallFailed(Exception):
    """A request of the call cannot be delivered any more: the call fails."""


class HeldStream(Architecture):
    """A tool call held open on one replica's SSE stream while the user answers.

    Subclasses say how an answer reaches the waiting replica
    (`deliver_answer`) and what the replica does before asking
    (`before_asking`).
    """

    def call(self, call: Call) -> Generator[simpy.Event, object, None]:
        env = self.env
        client = self.params.client
        while True:
            replica = self.take(call) or (yield from self.retry_until_taken(call))
            if replica is None:
                self.finish(call, FAILED)
                return
            outcome = yield from self.attempt(call, replica)
            if outcome == LOST:
                if call.restarts >= client.max_call_restarts:
                    self.finish(call, LOST)
                    return
                call.restarts += 1
                yield env.timeout(client.reconnect_delay_s)
            elif outcome == _REJECTED:
                if not (yield from self.wait_to_retry(call)):
                    self.finish(call, FAILED)
                    return
            else:
                self.finish(call, outcome)
                return

    def attempt(self, call: Call, replica: Replica) -> Generator[simpy.Event, object, str]:
        """One try at the call on one replica's stream; returns how it ended."""
        env = self.env
        cluster = self.cluster
        workload = self.params.workload
        answer_timeout_s = self.params.client.answer_timeout_s
        cluster_params = self.params.cluster
        idle_cut_s = math.inf if cluster_params.keepalives_on else cluster_params.lb_idle_timeout_s
        deadline_s = answer_timeout_s if answer_timeout_s < idle_cut_s else idle_cut_s
        process = env.active_process
        assert process is not None  # this runs inside a SimPy process
        if call.first_replica < 0:
            call.first_replica = replica.index
        replica.connect()
        replica.attach(process)
        cluster.streams.move(env.now, 1)
        call.bytes_in += workload.request_bytes
        cpu_at_start = call.cpu_s
        holding_since = -1.0
        extra_s = self.overhead_s  # parsing the tools/call POST itself
        outcome = COMPLETED
        think_s = wait_s = 0.0
        question = 0
        late_answer_s = -1.0  # a cut the client learns of only when its user has answered
        try:
            questions = call.spec.round_masks(replica.version)
            for round_index, round_mask in enumerate(questions):
                # Only the tools/call POST crosses the wire here; a later round is the
                # held call resuming once its answer's POST (which crossed) came in.
                yield from self.execute(
                    call, replica, extra_s + call.round_cpu_s(round_index), True, round_index == 0
                )
                call.rounds += 1
                subscribed = self.before_asking(call)
                if subscribed is not None:
                    yield subscribed
                # One elicitation request per question, all sent on the stream at once; the
                # answers come back one by one, each its own POST to this replica. Both the
                # answer timeout and the idle timeout count from the moment they were sent.
                call.bytes_out += workload.response_bytes * round_mask.bit_count()
                extra_s = 0.0
                waited_s = 0.0
                for question in _bits(round_mask):
                    think_s = call.draw_think_s()
                    wait_s = think_s if waited_s + think_s <= deadline_s else deadline_s - waited_s
                    holding_since = env.now
                    cluster.held.move(holding_since, 1)
                    replica.hold(1)
                    self.waits += 1
                    yield env.timeout(wait_s)
                    cluster.held.move(env.now, -1)
                    replica.hold(-1)
                    holding_since = -1.0
                    call.think_s += wait_s
                    waited_s += wait_s
                    if wait_s < think_s:
                        # Cut by the idle timeout (a lost stream), or the question timed out.
                        cut = deadline_s == idle_cut_s and think_s != math.inf
                        outcome = LOST if cut else ABANDONED
                        break
                    self.answer(call, question)
                    call.bytes_in += workload.request_bytes
                    extra_s += yield from self.deliver_answer(call, replica)
                if outcome != COMPLETED:
                    break
            else:
                yield from self.execute(
                    call, replica, extra_s + call.round_cpu_s(len(questions)), True, not questions
                )
                call.rounds += 1
                call.bytes_out += workload.response_bytes
        except Interrupt:
            outcome = LOST
            if holding_since >= 0:
                cluster.held.move(env.now, -1)
                replica.hold(-1)
                call.think_s += env.now - holding_since
                if think_s == math.inf:
                    # The user has walked away: nobody is left to start the call again.
                    outcome = ABANDONED
                elif self.params.client.cut_noticed_on_answer and wait_s == think_s:
                    late_answer_s = holding_since + wait_s - env.now
        except Shed:
            outcome = _REJECTED
        except (StoreUnavailable, CallFailed):
            outcome = FAILED
        if outcome in (LOST, _REJECTED, FAILED):
            # The stream's work is gone: a restart redoes every round.
            call.wasted_cpu_s += call.cpu_s - cpu_at_start
        replica.disconnect()
        replica.detach(process)
        cluster.streams.move(env.now, -1)
        if late_answer_s >= 0:
            # The user keeps thinking and answers; the refused answer shows the cut, and the
            # restarted call asks that question again (a re-prompt).
            yield env.timeout(late_answer_s)
            call.think_s += late_answer_s
            self.answer(call, question)
        return outcome

    def before_asking(self, call: Call) -> simpy.Event | None:
        """What the holding replica does before it sends the question: an event to wait
        for, or None (nothing, by default)."""
        return None

    @abstractmethod
    def deliver_answer(self, call: Call, holder: Replica) -> Generator[simpy.Event, object, float]:
        """Bring the answer POST to `holder`; returns CPU the holder adds to its next round."""

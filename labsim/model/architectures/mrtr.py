"""MRTR: every round is an independent request, and the call's state travels with the client.

A replica that needs an answer ends the request with `InputRequiredResult`:
the question plus a sealed `requestState` holding what the call has gathered
so far. The client asks the user, then sends a new request with the answer and
the state back; the load balancer may pick any replica, which opens the state
and carries on. Nothing is held while the user thinks: no memory, no stream,
no store. A crash only touches requests being worked on, and the client
retries that round without asking the user anything again. During a rolling
upgrade a round that lands on the new tool version keeps the answers carried in
the state and asks only for the question that changed. A state older than its
time to live (`StateParams.state_ttl_s`, the server's) is refused and the user is
asked again from the first question (counted as `expired_states`). An overloaded replica
can hand its half-done work back in `requestState` (load shedding), and another
replica resumes it.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import simpy
from simpy import Interrupt

from labsim.model.architectures.base import Architecture, Shed
from labsim.model.metrics import ABANDONED, COMPLETED, FAILED, LOST
from labsim.model.tools import questions_asked

if TYPE_CHECKING:
    from simpy.events import Process

    from labsim.model.call import Call
    from labsim.model.cluster import Replica


class _Carried:
    """What the client carries from one request of a call to the next.

    `answered` is the questions answered so far (in `requestState`), `state_bytes` the
    state it sends back (0: none yet), `done_s` the work of this round a replica already
    did before offloading it, `resumed` whether this round carries that progress, and
    `earlier_cpu_s` the tool CPU of the completed rounds, for re-execution.
    """

    __slots__ = ("answered", "done_s", "earlier_cpu_s", "resumed", "round_index", "state_bytes")

    def __init__(self) -> None:
        self.answered = 0
        self.state_bytes = 0
        self.done_s = 0.0
        self.resumed = False
        self.earlier_cpu_s = 0.0
        self.round_index = 0


class Mrtr(Architecture):
    """Multi Round-Trip Requests (protocol 2026-07-28): stateless rounds, state in the client."""

    name = "mrtr"
    can_offload = True

    def call(self, call: Call) -> Generator[simpy.Event, object, None]:
        """Request after request, each to whatever replica the balancer picks, to an outcome."""
        process = self.env.active_process
        assert process is not None  # this runs inside a SimPy process
        carried = _Carried()
        outcome: str | None = None
        while outcome is None:
            replica = self.take(call) or (yield from self.retry_until_taken(call))
            if replica is None:
                outcome = FAILED
            else:
                outcome = yield from self._request(call, replica, carried, process)
        self.finish(call, outcome)

    def _request(
        self, call: Call, replica: Replica, carried: _Carried, process: Process
    ) -> Generator[simpy.Event, object, str | None]:
        """One request on `replica`: the call's outcome if it ended, None if another follows."""
        if call.first_replica < 0:
            call.first_replica = replica.index
        question = questions_asked(carried.answered, call.spec.round_masks(replica.version))
        tool_cpu_s = call.round_cpu_s(carried.round_index)
        work_s = self._work_s(tool_cpu_s, question, carried)
        call.bytes_in += call.request_bytes + carried.state_bytes
        # Only a tool that checkpoints (crunch) can be stopped and handed on.
        sheddable = not self.offloads or call.spec.offloads
        replica.attach(process)
        cpu_before = call.cpu_s
        try:
            yield from self.execute(call, replica, work_s, sheddable and not carried.resumed)
        except Interrupt:
            # The replica died under the request: the client retries this round.
            replica.close()
            call.wasted_cpu_s += call.cpu_s - cpu_before
            return (yield from self._retry_after_cut(call))
        except Shed as shed:
            replica.release()
            replica.detach(process)
            return (yield from self._after_shed(call, replica, carried, shed, cpu_before))
        replica.release()
        replica.detach(process)
        call.rounds += 1
        carried.round_index += 1
        carried.earlier_cpu_s += tool_cpu_s
        carried.done_s = 0.0
        carried.resumed = False
        if not question:
            call.bytes_out += call.response_bytes
            return COMPLETED
        return (yield from self._ask(call, carried, question))

    def _work_s(self, tool_cpu_s: float, question: int, carried: _Carried) -> float:
        """The replica's work on this request: overhead, the tool (less what was done before
        an offload), re-execution of earlier rounds, opening and sealing the state."""
        state = self.params.state
        work_s = self.overhead_s + tool_cpu_s - carried.done_s
        if carried.earlier_cpu_s:
            work_s += state.reexecution_fraction * carried.earlier_cpu_s
        if carried.state_bytes:
            work_s += state.open_cpu_s
        if question:
            work_s += state.seal_cpu_s
        return work_s

    def _retry_after_cut(self, call: Call) -> Generator[simpy.Event, object, str | None]:
        """After a cut request: reconnect and retry the round, or give up past the retries."""
        client = self.params.client
        call.retries += 1
        if call.retries > client.max_retries:
            return FAILED
        yield self.env.timeout(client.reconnect_delay_s)
        return None

    def _after_shed(
        self, call: Call, replica: Replica, carried: _Carried, shed: Shed, cpu_before: float
    ) -> Generator[simpy.Event, object, str | None]:
        """An overloaded replica stopped the request at its checkpoint: with offloading, the
        progress goes back in `requestState` and the next request resumes it; otherwise the
        work is lost and the client backs off (a 503)."""
        client = self.params.client
        if self.offloads:
            # input_required with only requestState: the progress moves on.
            state = self.params.state
            carried.done_s += shed.done_s
            carried.resumed = True
            call.offloads += 1
            self._account(call, replica, state.seal_cpu_s)
            call.bytes_out += call.response_bytes + state.checkpoint_bytes
            carried.state_bytes += state.checkpoint_bytes
            if client.offload_retry_delay_s:
                yield self.env.timeout(client.offload_retry_delay_s)
            return None
        call.wasted_cpu_s += call.cpu_s - cpu_before
        if not (yield from self.wait_to_retry(call)):
            return FAILED
        return None

    def _ask(
        self, call: Call, carried: _Carried, question: int
    ) -> Generator[simpy.Event, object, str | None]:
        """InputRequiredResult: the question and the sealed state go back to the client, and
        the user answers (or walks away); None when the next request follows."""
        env = self.env
        state = self.params.state
        client = self.params.client
        carried.state_bytes = state.base_bytes + state.bytes_per_answer * call.answers
        call.bytes_out += call.response_bytes + carried.state_bytes
        think_s = call.draw_think_s(question.bit_count())
        self.waits += 1
        if think_s >= client.answer_timeout_s:
            yield env.timeout(client.answer_timeout_s)
            call.think_s += client.answer_timeout_s
            return ABANDONED
        yield env.timeout(think_s)
        call.think_s += think_s
        self.answer(call, question)
        if carried.answered and think_s > state.state_ttl_s:
            # The state carrying the earlier answers expired while the user thought:
            # the server asks again from the first question.
            call.expired_states += 1
            if call.expired_states > client.max_call_restarts:
                return LOST
            carried.answered = 0
            return None
        carried.answered |= question
        return None

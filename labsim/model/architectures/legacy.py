"""The 2025-11-25 way of asking a user: one tool call held open on an SSE stream.

The client POSTs `tools/call`; the replica the load balancer picked answers
with an SSE stream, sends `elicitation/create` on it and waits, keeping the
call's memory and the stream while the user thinks. The user's answer is a
separate POST that has to reach that replica: through a shared store
(`sse_store`) or by a sticky load balancer (`sticky`), the two subclasses.
Whatever cuts the stream (a crash, the end of a drain, the load balancer's idle
timeout) loses the call: the client starts it again and the user is asked again
for everything they had already answered. So does an answer the servers refuse (a
full replica's 503, or a replica that does not hold the call): the client gives up the
stream, whose call waits for an answer that will not come, and starts again, as the
load test's client does (`loadtest/users/legacy_flow.py`).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Generator
from typing import TYPE_CHECKING

import simpy
from simpy import Interrupt

from labsim.model.architectures.base import Architecture, Shed
from labsim.model.metrics import ABANDONED, COMPLETED, FAILED, LOST
from labsim.model.store import StoreUnavailable

if TYPE_CHECKING:
    from simpy.events import Process

    from labsim.model.call import Call
    from labsim.model.cluster import Replica

_REJECTED = "rejected"  # an attempt ended by a 503: the client backs off and starts again


def _bits(mask: int) -> list[int]:
    """The single-question masks of `mask`, lowest first."""
    return [1 << k for k in range(mask.bit_length()) if mask >> k & 1]


class _Hold:
    """The question a held call waits on: since when (-1: none), how long its user takes
    (inf: never answers), and how long the stream waits for it."""

    __slots__ = ("question", "since_s", "think_s", "wait_s")

    def __init__(self) -> None:
        self.question = 0
        self.since_s = -1.0
        self.think_s = self.wait_s = 0.0


class AnswerRefused(Exception):
    """The user's answer was not taken: no replica in rotation, a full one (503), or one
    that does not hold the call."""


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
            self.open_session(call)
            replica = self.take(call) or (yield from self.retry_until_taken(call))
            if replica is None:
                self.finish(call, FAILED)
                return
            outcome = yield from self.attempt(call, replica)
            if outcome == LOST:
                call.session.opened = False  # the client opens a new session first
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
        process = self.env.active_process
        assert process is not None  # this runs inside a SimPy process
        self._open_stream(call, replica, process)
        cpu_at_start = call.cpu_s
        hold = _Hold()
        late_answer_s = -1.0  # a cut the client learns of only when its user has answered
        try:
            outcome = yield from self._serve(call, replica, hold)
        except Interrupt:
            outcome, late_answer_s = self._cut(call, replica, hold)
        except Shed:
            outcome = _REJECTED
        except StoreUnavailable:
            outcome = FAILED
        except AnswerRefused:
            outcome = LOST
        if outcome in (LOST, _REJECTED, FAILED):
            # The stream's work is gone: a restart redoes every round.
            call.wasted_cpu_s += call.cpu_s - cpu_at_start
        # A stream that ended with an answer leaves its connection to the balancer for
        # reuse; one cut or given up closes it.
        self._close_stream(replica, process, kept=outcome != LOST)
        if late_answer_s >= 0:
            # The user keeps thinking and answers; the refused answer shows the cut, and the
            # restarted call asks that question again (a re-prompt).
            yield self.env.timeout(late_answer_s)
            call.think_s += late_answer_s
            self.answer(call, hold.question)
        return outcome

    def _open_stream(self, call: Call, replica: Replica, process: Process) -> None:
        """The `tools/call` POST reaches `replica` (which took it, `take`) and is answered
        with a stream, held on the request's connection."""
        if call.first_replica < 0:
            call.first_replica = replica.index
        replica.attach(process)
        self.cluster.streams.move(self.env.now, 1)
        call.bytes_in += call.request_bytes

    def _close_stream(self, replica: Replica, process: Process, kept: bool) -> None:
        """The stream ends, whatever ended the attempt; its connection stays open for reuse
        (`kept`) or closes."""
        if kept:
            replica.release()
        else:
            replica.close()
        replica.detach(process)
        self.cluster.streams.move(self.env.now, -1)

    def _serve(
        self, call: Call, replica: Replica, hold: _Hold
    ) -> Generator[simpy.Event, object, str]:
        """The call's rounds on the held stream: work, ask, wait for each answer; how it ended.

        Only the tools/call POST crosses the wire here; a later round is the held call
        resuming once its answer's POST (which crossed) came in.
        """
        extra_s = self.overhead_s  # parsing the tools/call POST itself
        questions = call.spec.round_masks(replica.version)
        for round_index, round_mask in enumerate(questions):
            yield from self.execute(
                call, replica, extra_s + call.round_cpu_s(round_index), True, round_index == 0
            )
            call.rounds += 1
            subscribed = self.before_asking(call)
            if subscribed is not None:
                yield subscribed
            # One elicitation request per question, all sent on the stream at once.
            call.bytes_out += call.response_bytes * round_mask.bit_count()
            outcome, extra_s = yield from self._wait_for_answers(call, replica, round_mask, hold)
            if outcome != COMPLETED:
                return outcome
        yield from self.execute(
            call, replica, extra_s + call.round_cpu_s(len(questions)), True, not questions
        )
        call.rounds += 1
        call.bytes_out += call.response_bytes
        return COMPLETED

    def _wait_for_answers(
        self, call: Call, replica: Replica, round_mask: int, hold: _Hold
    ) -> Generator[simpy.Event, object, tuple[str, float]]:
        """The replica holds the call while the user answers the round's questions, one by
        one, each answer a POST of its own brought to the holder.

        Returns COMPLETED once every answer is in (or why not), and the CPU the holder adds
        to its next round. Both the answer timeout and the idle timeout count from the
        moment the questions were sent.
        """
        env, cluster = self.env, self.cluster
        answer_timeout_s = self.params.client.answer_timeout_s
        cluster_params = self.params.cluster
        idle_cut_s = math.inf if cluster_params.keepalives_on else cluster_params.lb_idle_timeout_s
        deadline_s = answer_timeout_s if answer_timeout_s < idle_cut_s else idle_cut_s
        extra_s = 0.0
        waited_s = 0.0
        for question in _bits(round_mask):
            hold.question = question
            think_s = call.draw_think_s()
            wait_s = think_s if waited_s + think_s <= deadline_s else deadline_s - waited_s
            hold.think_s, hold.wait_s, hold.since_s = think_s, wait_s, env.now
            cluster.held.move(env.now, 1)
            replica.hold(1)
            self.waits += 1
            yield env.timeout(wait_s)
            cluster.held.move(env.now, -1)
            replica.hold(-1)
            hold.since_s = -1.0
            call.think_s += wait_s
            waited_s += wait_s
            if wait_s < think_s:
                # Cut by the idle timeout (a lost stream), or the question timed out.
                cut = deadline_s == idle_cut_s and think_s != math.inf
                return (LOST if cut else ABANDONED), extra_s
            self.answer(call, question)
            call.bytes_in += call.request_bytes
            extra_s += yield from self.deliver_answer(call, replica)
        return COMPLETED, extra_s

    def _cut(self, call: Call, replica: Replica, hold: _Hold) -> tuple[str, float]:
        """A crash or a drain cut the stream: how the attempt ended, and in how long the
        client learns of it by a refused answer (-1: it notices at once)."""
        if hold.since_s < 0:
            return LOST, -1.0
        now = self.env.now
        self.cluster.held.move(now, -1)
        replica.hold(-1)
        call.think_s += now - hold.since_s
        if hold.think_s == math.inf:
            # The user has walked away: nobody is left to start the call again.
            return ABANDONED, -1.0
        if self.params.client.cut_noticed_on_answer and hold.wait_s == hold.think_s:
            return LOST, hold.since_s + hold.wait_s - now
        return LOST, -1.0

    def before_asking(self, call: Call) -> simpy.Event | None:
        """What the holding replica does before it sends the question: an event to wait
        for, or None (nothing, by default)."""
        return None

    def open_session(self, call: Call) -> None:
        """What the balancer sees of a user opening the call's session, before its
        `tools/call`: nothing, by default (a sticky balancer sends the whole session,
        `initialize` first, to one replica, as it does the call)."""

    def answer_post(self, call: Call) -> Generator[simpy.Event, object, Replica]:
        """The answer POST, served by the replica the balancer sends it to, which it
        returns; refused (`AnswerRefused`) when none takes it: every replica at its
        connection limit or out of rotation."""
        receiver = self.take(call)
        if receiver is None:
            raise AnswerRefused
        try:
            yield from self.execute(call, receiver, self.overhead_s, False)
        finally:
            receiver.release()
        return receiver

    @abstractmethod
    def deliver_answer(self, call: Call, holder: Replica) -> Generator[simpy.Event, object, float]:
        """Bring the answer POST to `holder`; returns CPU the holder adds to its next round."""

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

import simpy
from simpy import Interrupt

from labsim.architecture import Architecture, Call, Shed
from labsim.metrics import ABANDONED, COMPLETED, FAILED, LOST
from labsim.tools import questions_asked


class Mrtr(Architecture):
    """Multi Round-Trip Requests (protocol 2026-07-28): stateless rounds, state in the client."""

    name = "mrtr"
    can_offload = True

    def call(self, call: Call) -> Generator[simpy.Event, object, None]:
        env = self.env
        state = self.params.state
        workload = self.params.workload
        client = self.params.client
        tool = call.spec
        # Only a tool that checkpoints (crunch) can be stopped and handed on.
        sheddable = not self.offloads or tool.offloads
        process = env.active_process
        assert process is not None  # this runs inside a SimPy process
        answered = 0  # questions answered, carried in requestState
        state_bytes = 0  # the requestState the client sends back (0: none yet)
        done_s = 0.0  # work of this round already done by a replica that offloaded it
        resumed = False  # this round carries checkpointed progress
        earlier_cpu_s = 0.0  # tool CPU of completed rounds, for re-execution
        round_index = 0
        while True:
            replica = self.take(call) or (yield from self.retry_until_taken(call))
            if replica is None:
                self.finish(call, FAILED)
                return
            if call.first_replica < 0:
                call.first_replica = replica.index
            question = questions_asked(answered, tool.round_masks(replica.version))
            tool_cpu_s = call.round_cpu_s(round_index)
            work_s = self.overhead_s + tool_cpu_s - done_s
            if earlier_cpu_s:
                work_s += state.reexecution_fraction * earlier_cpu_s
            if state_bytes:
                work_s += state.open_cpu_s
            if question:
                work_s += state.seal_cpu_s
            call.bytes_in += workload.request_bytes + state_bytes
            replica.connect()
            replica.attach(process)
            cpu_before = call.cpu_s
            try:
                yield from self.execute(call, replica, work_s, sheddable and not resumed)
            except Interrupt:
                # The replica died under the request: the client retries this round.
                replica.disconnect()
                call.wasted_cpu_s += call.cpu_s - cpu_before
                call.retries += 1
                if call.retries > client.max_retries:
                    self.finish(call, FAILED)
                    return
                yield env.timeout(client.reconnect_delay_s)
                continue
            except Shed as shed:
                replica.disconnect()
                replica.detach(process)
                if self.offloads:
                    # input_required with only requestState: the progress moves on.
                    done_s += shed.done_s
                    resumed = True
                    call.offloads += 1
                    self._account(call, replica, state.seal_cpu_s)
                    call.bytes_out += workload.response_bytes + state.checkpoint_bytes
                    state_bytes += state.checkpoint_bytes
                    if client.offload_retry_delay_s:
                        yield env.timeout(client.offload_retry_delay_s)
                    continue
                call.wasted_cpu_s += call.cpu_s - cpu_before
                if not (yield from self.wait_to_retry(call)):
                    self.finish(call, FAILED)
                    return
                continue
            replica.disconnect()
            replica.detach(process)
            call.rounds += 1
            round_index += 1
            earlier_cpu_s += tool_cpu_s
            done_s = 0.0
            resumed = False
            if not question:
                call.bytes_out += workload.response_bytes
                self.finish(call, COMPLETED)
                return
            # InputRequiredResult: the question and the sealed state go back to the client.
            state_bytes = state.base_bytes + state.bytes_per_answer * call.answers
            call.bytes_out += workload.response_bytes + state_bytes
            think_s = call.draw_think_s(question.bit_count())
            self.waits += 1
            if think_s >= client.answer_timeout_s:
                yield env.timeout(client.answer_timeout_s)
                call.think_s += client.answer_timeout_s
                self.finish(call, ABANDONED)
                return
            yield env.timeout(think_s)
            call.think_s += think_s
            self.answer(call, question)
            if answered and think_s > state.state_ttl_s:
                # The state carrying the earlier answers expired while the user thought:
                # the server asks again from the first question.
                call.expired_states += 1
                if call.expired_states > client.max_call_restarts:
                    self.finish(call, LOST)
                    return
                answered = 0
                continue
            answered |= question

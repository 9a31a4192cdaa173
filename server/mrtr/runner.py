"""Multi Round-Trip Requests: one attempt of a handler, ending complete or `input_required`.

This is the heart of SEP-2322 on the server side. An attempt:

1. opens the `requestState` the client echoed (if any) and checks it belongs to this
   principal and this exact request;
2. runs the handler with a context whose answers come from that state and from this
   request's `inputResponses`;
3. if the handler needs more, ends the request with an `InputRequiredResult`: the
   questions still open in `inputRequests`, and everything already learnt sealed in a fresh
   `requestState`, so whichever replica gets the retry carries on from here.

Nothing is kept on the server between rounds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from server.core.call import Call, Invocation
from server.core.context import BecomeTask, Context, InputRequired, MrtrChannel, Offload, Replica
from server.core.metrics import ServerMetrics
from server.core.store import SingleUse, StoreUnavailable, store_error
from server.mrtr.state import OpenedState, Origin, StateError, StateSealer
from server.protocol.inputs import input_responses
from server.protocol.jsonrpc import invalid_params

#: requestState failures answered by asking again from the first question.
RESTARTABLE = frozenset({"expired", "unknown_key"})
#: Failures found only once the state opened and named the caller as its principal: the
#: caller is the state's owner, and may hear why. Anyone else hears only that it failed:
#: "another principal's" would tell a thief that a stolen state is genuine.
TOLD_TO_THE_OWNER = frozenset({"wrong_request"})

log = logging.getLogger("server")


class MrtrAttempt:
    """The 2026-07-28 attempt strategy: one replica's sealer, limits and metrics."""

    def __init__(
        self,
        sealer: StateSealer,
        metrics: ServerMetrics,
        replica: Replica,
        *,
        max_rounds: int,
        max_request_state_bytes: int,
        state_error_detail: bool = False,
        single_use: SingleUse | None = None,
    ) -> None:
        self.sealer = sealer
        self.metrics = metrics
        self.replica = replica
        self.max_rounds = max_rounds
        self.max_request_state_bytes = max_request_state_bytes
        #: Whether every caller hears why its state was refused (a classroom), not only
        #: the state's owner; the log and the metrics always say.
        self.state_error_detail = state_error_detail
        #: Where the states of tools with side effects are recorded as used (the shared
        #: task store), so each runs once however often it is sent; None: nowhere.
        self.single_use = single_use

    def open_state(self, token: Any, origin: Origin) -> OpenedState | None:
        """What the echoed requestState `token` carries: rounds so far, answers, tool state.

        None when the state is too old to use: expired, or sealed with a key this replica
        no longer holds (retired after a rotation). Such a state is not an attack, just
        late, so the request starts again and the user is asked again; nothing in it is
        used, so a state that only looks that way gains nobody anything. Every other
        failure (tampered, another principal's, another request's) is an error.
        """
        if isinstance(token, str) and len(token) > self.max_request_state_bytes:
            self.metrics.state_failures.labels("too_large").inc()
            raise invalid_params(
                f"requestState is larger than {self.max_request_state_bytes} bytes"
            )
        try:
            opened = self.sealer.open(token, origin)
        except StateError as exc:
            self.metrics.state_failures.labels(exc.reason).inc()
            if exc.reason in RESTARTABLE:
                self.metrics.state_restarts.labels(exc.reason).inc()
                return None
            log.warning("requestState refused for %r: %s (%s)", origin.principal, exc, exc.reason)
            if self.state_error_detail or exc.reason in TOLD_TO_THE_OWNER:
                raise invalid_params(
                    f"Invalid requestState: {exc}", {"reason": exc.reason}
                ) from exc
            raise invalid_params("Invalid requestState") from None
        return opened

    async def use_once(self, opened: OpenedState, invocation: Invocation) -> None:
        """Record a side-effecting tool's state as used; a second use is refused.

        Checked before the handler runs, so of any number of copies of one round sent at
        once, only the first does what the round confirmed (creates the machine).
        """
        assert self.single_use is not None
        try:
            first = await self.single_use.claim_once(
                f"state:{opened.nonce.hex()}", max(opened.seconds_left, 0.0) + 1.0
            )
        except StoreUnavailable as exc:
            raise store_error(exc, f"{exc.store.capitalize()} store error: ") from exc
        if not first:
            self.metrics.state_failures.labels("used").inc()
            raise invalid_params(
                f"This requestState was already used: {invocation.name} has side effects, so "
                "each of its rounds runs once. Start the call again.",
                {"reason": "used"},
            )

    async def __call__(self, call: Call, invocation: Invocation) -> dict[str, Any]:
        """Run one attempt of the handler: its result, complete or input_required."""
        params = call.message.params
        responses = input_responses(params.get("inputResponses", {}))
        # The origin is built only for a round that opens or seals a state: its digest
        # hashes the arguments, and a first round usually does neither.
        origin: Origin | None = None
        opened: OpenedState | None = None
        single_use = self.single_use is not None and _has_side_effects(invocation)
        if "requestState" in params:
            origin = _origin(call, invocation)
            opened = self.open_state(params["requestState"], origin)
            if opened is None:
                # Start again: the answers sent with a stale state reply to questions of a
                # round the server no longer knows, so they are dropped too.
                responses = {}
            elif single_use:
                await self.use_once(opened, invocation)
        elif single_use:
            # A tool with side effects takes answers only with the state it asked with:
            # answers sent without one would confirm a round that no single-use state
            # guards, as often as they are sent.
            responses = {}
        if opened is None:
            rounds, carried, tool_state, was_asked = 0, {}, {}, None
        else:
            rounds, carried, tool_state = opened.round, opened.answers, opened.tool_state
            was_asked = opened.asked
        channel = MrtrChannel(carried, responses, call.client_capabilities)
        ctx = Context(
            call,
            invocation.arguments,
            self.replica,
            channel,
            tool_state,
            may_become_task=invocation.may_become_task,
        )
        try:
            result = await invocation.handler(ctx)
        except InputRequired as asked:
            self.metrics.count(self.metrics.asked_questions)
            requests = asked.requests
            wire: dict[str, Any] = {}
            for key, request in requests.items():
                wire[key] = request.to_wire()
            out: dict[str, Any] = {"resultType": "input_required", "inputRequests": wire}
            # The seed's first round carries no state when there is nothing to carry; a
            # tool with side effects always does, so that its answers are used once.
            carry = channel.to_carry(was_asked)
            if carry or ctx.state or single_use:
                out["requestState"] = self._seal(
                    origin or _origin(call, invocation),
                    rounds + 1,
                    carry,
                    ctx.state,
                    asked=requests,
                )
            return out
        except Offload:
            # Shedding moves work, it asks the user nothing: it does not use up input rounds.
            self.metrics.count(self.metrics.offloaded)
            return {
                "resultType": "input_required",
                "requestState": self._seal(
                    origin or _origin(call, invocation),
                    rounds,
                    channel.to_carry(was_asked),
                    ctx.state,
                    asked=was_asked or (),
                ),
            }
        except BecomeTask as switch:
            # Ephemeral then persistent: what this attempt learnt goes into the new task.
            switch.answers = dict(channel.used)
            raise
        result["resultType"] = "complete"
        return result

    def _seal(
        self,
        origin: Origin,
        rounds: int,
        answers: dict[str, Any],
        tool_state: dict[str, Any],
        *,
        asked: Iterable[str],
    ) -> str:
        if rounds >= self.max_rounds:
            raise invalid_params(
                f"this request needed more than {self.max_rounds} input rounds; start again"
            )
        token = self.sealer.seal(
            origin, round=rounds, answers=answers, tool_state=tool_state, asked=asked
        )
        if len(token) > self.max_request_state_bytes:
            # The retry would be refused: better to say so now than to hand it out.
            self.metrics.state_failures.labels("too_large_to_issue").inc()
            raise invalid_params(
                f"this request's state outgrew {self.max_request_state_bytes} bytes; start again"
            )
        self.metrics.count(self.metrics.states_sealed_key)
        return token


def _has_side_effects(invocation: Invocation) -> bool:
    return invocation.tool is not None and invocation.tool.side_effects


def _origin(call: Call, invocation: Invocation) -> Origin:
    """What a state of this request is bound to: principal, method, name, arguments."""
    return Origin.of(call.principal, call.message.method, invocation.name, invocation.arguments)

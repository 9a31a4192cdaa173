"""How a legacy handler asks: on the call's open SSE stream, then waiting for the answer.

Each question becomes a JSON-RPC request the server sends on the stream that answers the
`tools/call`, with an id of its own, registered in the legacy store so that the client's
answer, wherever it lands, finds its way back. The coroutine, and everything it keeps
alive, stays in memory until then: the cost MRTR removes.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from typing import Any

from server.core.answer_schema import schema_problem
from server.core.call import Call, Invocation
from server.core.context import Context, Replica, missing_capability
from server.core.store import StoreUnavailable
from server.legacy.held import HeldCall, HeldCalls
from server.legacy.metrics import LegacyMetrics
from server.legacy.store import LegacyStore, Session
from server.protocol import jsonrpc
from server.protocol.inputs import InputRequest
from server.protocol.jsonrpc import RpcError, invalid_params

#: The JSON-RPC error code the MCP SDKs use for a request that timed out.
REQUEST_TIMEOUT = -32001


class Asking:
    """How one replica asks on SSE streams: what every `SseChannel` of it shares.

    The held calls (each question is measured there), the store that routes an answer back
    to the call waiting for it, the metrics, and how long and how often to ask.
    """

    def __init__(
        self,
        calls: HeldCalls,
        store: LegacyStore,
        metrics: LegacyMetrics,
        *,
        max_rounds: int,
        answer_timeout_s: float,
    ) -> None:
        self.calls = calls
        self.store = store
        self.metrics = metrics
        self.max_rounds = max_rounds
        self.answer_timeout_s = answer_timeout_s
        self._request_ids = itertools.count(1)
        # Request ids are unique across replicas, so answers can be routed by them.
        self._id_prefix = secrets.token_hex(4)

    def new_request_id(self) -> str:
        """A fresh id for a request the server sends a client."""
        return f"{self._id_prefix}-{next(self._request_ids)}"

    async def forget(self, session_id: str, request_id: str) -> None:
        """Stop waiting for an answer; a store failure here is counted, not raised."""
        try:
            await self.store.forget(session_id, request_id)
        except StoreUnavailable as exc:
            self.metrics.store_errors.labels(exc.operation).inc()


class SseChannel:
    """Asks the client on the call's open SSE stream, then waits for the answers.

    Each question becomes a JSON-RPC request with a fresh server-side id, registered in the
    legacy store so that the answer, wherever it lands, finds its way back here. The
    coroutine, and everything it references, stays in memory until then.
    """

    can_offload = False

    def __init__(self, asking: Asking, held: HeldCall, session: Session) -> None:
        self.asking = asking
        self.held = held
        self.session = session

    async def ask(self, requests: dict[str, InputRequest]) -> dict[str, Any]:
        lacking = {r.capability for r in requests.values()} - set(self.session.client_capabilities)
        if lacking:
            raise missing_capability(lacking)
        answers: dict[str, Any] = {}
        open_requests = dict(requests)
        # An answer that does not fit is no answer: ask again, a bounded number of times.
        for _ in range(self.asking.max_rounds):
            replies = await self._round_trip(open_requests)
            for key, reply in replies.items():
                if "error" in reply:
                    error = reply.get("error") or {}
                    raise RpcError(
                        jsonrpc.INTERNAL_ERROR,
                        f"the client answered {open_requests[key].method} with an error: "
                        f"{error.get('message', '')}",
                        {"clientError": error},
                    )
                parsed = open_requests[key].parse(reply.get("result"))
                problem = schema_problem(requests[key], parsed) if parsed is not None else None
                if problem:
                    # Asked again on the stream, saying why.
                    open_requests[key] = requests[key].again(problem)
                elif parsed is not None:
                    answers[key] = parsed
            open_requests = {k: r for k, r in open_requests.items() if k not in answers}
            if not open_requests:
                return answers
        raise invalid_params(f"no usable answer for {', '.join(open_requests)}; start again")

    async def _round_trip(self, requests: dict[str, InputRequest]) -> dict[str, dict[str, Any]]:
        """Send each request on the stream and wait for every reply (or time out)."""
        asking, held, session_id = self.asking, self.held, self.session.session_id
        sent: dict[str, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        try:
            for key, request in requests.items():
                rid = asking.new_request_id()
                sent[key] = (rid, await asking.store.expect(session_id, rid))
                held.waiting_for.add(rid)
                message = {"jsonrpc": "2.0", "id": rid, **request.to_wire()}
                await held.emit(message)
                asking.metrics.server_requests.labels(request.method).inc()
            # Measured once the task is suspended, when its whole await chain is visible.
            asyncio.get_running_loop().call_soon(asking.calls.measure, held)
            try:
                async with asyncio.timeout(asking.answer_timeout_s):
                    replies = await asyncio.gather(*(future for _, future in sent.values()))
            except TimeoutError:
                asking.metrics.answer_timeouts.inc()
                for rid, future in sent.values():
                    # gather cancelled the futures still waiting when time ran out.
                    if future.cancelled() or not future.done():
                        await held.emit(_cancelled(rid, "no answer in time"))
                raise RpcError(
                    REQUEST_TIMEOUT,
                    f"no answer within {asking.answer_timeout_s:g} s to "
                    f"{', '.join(r.method for r in requests.values())}; the call is abandoned",
                ) from None
            return dict(zip(sent, replies, strict=True))
        except StoreUnavailable as exc:
            asking.metrics.store_errors.labels(exc.operation).inc()
            raise RpcError(jsonrpc.INTERNAL_ERROR, str(exc)) from None
        finally:
            held.held_bytes = 0
            for rid, _ in sent.values():
                held.waiting_for.discard(rid)
                await asking.forget(session_id, rid)


def _cancelled(request_id: str, reason: str) -> dict[str, Any]:
    params = {"requestId": request_id, "reason": reason}
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


class SseAttempt:
    """The 2025-11-25 attempt strategy: the handler asks through the call's SSE channel.

    A legacy call never ends early to be retried: the handler runs once, to the end,
    waiting for each answer.
    """

    def __init__(self, replica: Replica) -> None:
        self.replica = replica

    async def __call__(self, call: Call, invocation: Invocation) -> dict[str, Any]:
        if call.channel is None:
            raise RuntimeError("a legacy call runs with the SseChannel of its stream")
        ctx = Context(call, invocation.arguments, self.replica, call.channel)
        result = await invocation.handler(ctx)
        result["resultType"] = "complete"
        return result

"""How a legacy handler asks: on the call's open SSE stream, then waiting for the answer.

Each question becomes a JSON-RPC request the server sends on the stream that answers the
`tools/call`, with an id of its own, registered in the legacy store so that the client's
answer, wherever it lands, finds its way back. The coroutine, and everything it keeps
alive, stays in memory until then: the cost MRTR removes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from server.core.call import Call, Invocation
from server.core.context import Context, Replica, missing_capability
from server.core.store import StoreUnavailable
from server.legacy.store import Session
from server.legacy.wire import KEEPALIVE
from server.protocol import jsonrpc
from server.protocol.inputs import InputRequest
from server.protocol.jsonrpc import RpcError, invalid_params
from server.transport.streamable import sse_event

if TYPE_CHECKING:
    from server.legacy.era import LegacyEra

#: The JSON-RPC error code the MCP SDKs use for a request that timed out.
REQUEST_TIMEOUT = -32001


@dataclass(slots=True)
class StreamEnd:
    """The last message of a held call: its JSON-RPC response."""

    message: dict[str, Any]


@dataclass(eq=False)
class HeldCall:
    """A legacy call holding its HTTP response open: its stream queue and what it waits for."""

    session_id: str
    rpc_id: jsonrpc.RequestId
    principal: str = ""
    queue: asyncio.Queue[dict[str, Any] | StreamEnd] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    stream: AsyncIterator[bytes] | None = None
    #: Server-side ids of the requests sent to the client and not answered yet.
    waiting_for: set[str] = field(default_factory=set)
    #: Estimated bytes this call keeps alive while it waits (see `server.legacy.footprint`).
    held_bytes: int = 0
    #: Whether its SSE stream is open now.
    streaming: bool = False

    async def events(
        self, first: dict[str, Any] | StreamEnd, *, keepalive_s: float, cancel_wait_s: float
    ) -> AsyncIterator[bytes]:
        """The SSE stream of this call, with keep-alive comments while nothing happens."""
        self.streaming = True
        getter: asyncio.Future[dict[str, Any] | StreamEnd] | None = None
        try:
            item = first
            while not isinstance(item, StreamEnd):
                yield sse_event(item)
                getter = asyncio.ensure_future(self.queue.get())
                while not getter.done():
                    await asyncio.wait({getter}, timeout=keepalive_s)
                    if not getter.done():
                        yield KEEPALIVE
                item, getter = getter.result(), None
            yield sse_event(item.message)
        finally:
            self.streaming = False
            if getter is not None:
                getter.cancel()
            # The client went away (or the session ended): the held call is abandoned.
            if self.task is not None and not self.task.done():
                self.task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait({self.task}, timeout=cancel_wait_s)


class SseChannel:
    """Asks the client on the call's open SSE stream, then waits for the answers.

    Each question becomes a JSON-RPC request with a fresh server-side id, registered in the
    legacy store so that the answer, wherever it lands, finds its way back here. The
    coroutine, and everything it references, stays in memory until then.
    """

    can_offload = False

    def __init__(self, era: LegacyEra, held: HeldCall, session: Session) -> None:
        self.era = era
        self.held = held
        self.session = session

    async def ask(self, requests: dict[str, InputRequest]) -> dict[str, Any]:
        lacking = {r.capability for r in requests.values()} - set(self.session.client_capabilities)
        if lacking:
            raise missing_capability(lacking)
        answers: dict[str, Any] = {}
        open_requests = dict(requests)
        # An answer that does not fit is no answer: ask again, a bounded number of times.
        for _ in range(self.era.config.max_rounds):
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
                if parsed is not None:
                    answers[key] = parsed
            open_requests = {k: r for k, r in open_requests.items() if k not in answers}
            if not open_requests:
                return answers
        raise invalid_params(f"no usable answer for {', '.join(open_requests)}; start again")

    async def _round_trip(self, requests: dict[str, InputRequest]) -> dict[str, dict[str, Any]]:
        """Send each request on the stream and wait for every reply (or time out)."""
        era, held, session_id = self.era, self.held, self.session.session_id
        sent: dict[str, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        try:
            for key, request in requests.items():
                rid = era.new_request_id()
                sent[key] = (rid, await era.store.expect(session_id, rid))
                held.waiting_for.add(rid)
                message = {"jsonrpc": "2.0", "id": rid, **request.to_wire()}
                await held.queue.put(message)
                era.metrics.server_requests.labels(request.method).inc()
            # Measured once the task is suspended, when its whole await chain is visible.
            asyncio.get_running_loop().call_soon(era.measure, held)
            try:
                async with asyncio.timeout(era.config.legacy_answer_timeout_s):
                    replies = await asyncio.gather(*(future for _, future in sent.values()))
            except TimeoutError:
                era.metrics.answer_timeouts.inc()
                for rid, future in sent.values():
                    # gather cancelled the futures still waiting when time ran out.
                    if future.cancelled() or not future.done():
                        await held.queue.put(_cancelled(rid, "no answer in time"))
                raise RpcError(
                    REQUEST_TIMEOUT,
                    f"no answer within {era.config.legacy_answer_timeout_s:g} s to "
                    f"{', '.join(r.method for r in requests.values())}; the call is abandoned",
                ) from None
            return dict(zip(sent, replies, strict=True))
        except StoreUnavailable as exc:
            era.metrics.store_errors.labels(exc.operation).inc()
            raise RpcError(jsonrpc.INTERNAL_ERROR, str(exc)) from None
        finally:
            held.held_bytes = 0
            for rid, _ in sent.values():
                held.waiting_for.discard(rid)
                await era.forget(session_id, rid)


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

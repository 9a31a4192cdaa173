"""How a legacy handler asks: on the call's open SSE stream, then waiting for the answer.

Each question becomes a JSON-RPC request the server sends on the stream that answers the
`tools/call`, with an id of its own, registered in the legacy store so that the client's
answer, wherever it lands, finds its way back. The coroutine, and everything it keeps
alive, stays in memory until then: the cost MRTR removes.
"""

from __future__ import annotations

import asyncio
import contextlib
from asyncio import FIRST_COMPLETED
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from server.core.call import Call, Invocation
from server.core.context import Context, Replica, missing_capability
from server.core.store import StoreUnavailable
from server.legacy.store import Session
from server.legacy.wire import KEEPALIVE
from server.protocol import jsonrpc
from server.protocol.inputs import InputRequest
from server.protocol.jsonrpc import RpcError, invalid_params
from server.transport.streamable import send_json, sse_event, start_sse

if TYPE_CHECKING:
    from server.legacy.era import LegacyEra

#: The JSON-RPC error code the MCP SDKs use for a request that timed out.
REQUEST_TIMEOUT = -32001


@dataclass(eq=False)
class HeldCall:
    """A legacy call holding its HTTP response open, and the stream it writes on.

    Whoever has a message for the client (the call's own task: a question, a
    notification, the result) writes it on the response at once: the call's task is where
    the work was done, and a hand-off to another task would wait its turn on the event
    loop behind every request ready at that moment, which near saturation is most of a
    round each time (the README's *Calibration* tells how that showed).
    The response starts as an SSE stream with the first message that is not the result;
    a call that never asks is answered with one JSON message.
    """

    session_id: str
    rpc_id: jsonrpc.RequestId
    principal: str = ""
    task: asyncio.Task[None] | None = None
    #: Server-side ids of the requests sent to the client and not answered yet.
    waiting_for: set[str] = field(default_factory=set)
    #: Estimated bytes this call keeps alive while it waits (see `server.legacy.footprint`).
    held_bytes: int = 0
    #: Whether its SSE stream is open now.
    streaming: bool = False
    #: Why the call is being ended, for the error it ends with (else: cancelled).
    end_reason: str = ""
    #: The ASGI `send` of the call's POST, given before the call's task starts.
    send: Send | None = None
    #: Done when the last message (the JSON-RPC response) has been written.
    ended: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    _started: bool = False

    async def emit(self, message: dict[str, Any]) -> None:
        """Write a request or notification for the client on the call's stream."""
        await self._write(message, last=False)

    async def finish(self, message: dict[str, Any]) -> None:
        """Write the call's JSON-RPC response: the last event, or the whole answer."""
        try:
            await self._write(message, last=True)
        finally:
            if not self.ended.done():
                self.ended.set_result(None)

    async def keep_alive(self) -> None:
        """A comment on an open stream, so that idle timeouts on the way do not cut it."""
        if self.send is not None and self.streaming and not self.ended.done():
            await self.send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})

    async def _write(self, message: dict[str, Any], last: bool) -> None:
        send = self.send
        assert send is not None, "a held call's task starts once its response has a send"
        if last and not self._started:
            self._started = True
            await send_json(send, message)
            return
        if not self._started:
            self._started = self.streaming = True
            await start_sse(send)
        if last:
            self.streaming = False
        event = sse_event(message)
        await send({"type": "http.response.body", "body": event, "more_body": not last})


class HeldResponse(Response):
    """The HTTP response of a held call: written by the call itself (`HeldCall`), whose
    task `start` starts once the response has its ASGI `send`; kept open here until the
    last message, with a keep-alive comment every `keepalive_s` while the stream is open.

    A client that goes away abandons the call: its task is cancelled.
    """

    def __init__(
        self,
        held: HeldCall,
        start: Callable[[], None],
        *,
        keepalive_s: float,
        cancel_wait_s: float,
    ) -> None:
        self.held = held
        self.start = start
        self.keepalive_s = keepalive_s
        self.cancel_wait_s = cancel_wait_s
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        held = self.held
        held.send = send
        self.start()  # the call's task: it writes on `send` from its first message
        # With the body read, the next ASGI message is `http.disconnect`: the client has
        # gone, or the response is complete.
        gone = asyncio.ensure_future(receive())
        try:
            while not held.ended.done():
                either = (held.ended, gone)
                await asyncio.wait(either, timeout=self.keepalive_s, return_when=FIRST_COMPLETED)
                if held.ended.done() or gone.done():
                    break
                await held.keep_alive()
        finally:
            if not gone.done():
                gone.cancel()
            task = held.task
            if not held.ended.done() and task is not None and not task.done():
                # The client went away (or the session ended): the held call is abandoned.
                task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait({task}, timeout=self.cancel_wait_s)


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
                await held.emit(message)
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
                        await held.emit(_cancelled(rid, "no answer in time"))
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

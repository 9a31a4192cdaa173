"""Legacy calls held open: each call's response, and the set of them a replica holds.

A legacy call that asks for input keeps its `tools/call` response open as an SSE stream
while the user thinks (`HeldCall`, written by `HeldResponse`). A replica keeps the set of
its held calls (`HeldCalls`): what `/healthz` and `/metrics` count, what a shutdown, a
DELETE or a cancellation ends, and what each waiting call costs in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
from asyncio import FIRST_COMPLETED
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from server.legacy.dialect import KEEPALIVE
from server.legacy.footprint import held_bytes
from server.protocol import jsonrpc
from server.transport.streamable import send_json, sse_event, start_sse


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


class HeldCalls:
    """The legacy calls one replica holds open now, and what they cost it."""

    def __init__(self) -> None:
        self._calls: set[HeldCall] = set()
        #: What every call shares (the era, the store, the catalog, the configuration...),
        #: left out of a held call's footprint; set once the replica is composed.
        self.shared: tuple[object, ...] = ()

    def add(self, held: HeldCall) -> None:
        """Count a call as held (until `discard`, when its task ends)."""
        self._calls.add(held)

    def discard(self, held: HeldCall) -> None:
        """Stop counting a call: its task has ended."""
        self._calls.discard(held)

    def __len__(self) -> int:
        """How many calls this replica holds open, all principals together."""
        return len(self._calls)

    def held_by(self, principal: str) -> int:
        """How many calls `principal` holds open on this replica."""
        return sum(1 for held in self._calls if held.principal == principal)

    def cancel_session(self, session_id: str) -> None:
        """Cancel every held call of a session (it has ended)."""
        for held in list(self._calls):
            if held.session_id == session_id and held.task is not None:
                held.task.cancel()

    def cancel_request(self, session_id: str, rpc_id: object) -> None:
        """Cancel a session's held call `rpc_id` (its client cancelled it)."""
        for held in list(self._calls):
            if held.session_id == session_id and held.rpc_id == rpc_id and held.task:
                held.task.cancel()

    def end_all(self, reason: str) -> int:
        """End every held call now: a JSON-RPC error on its stream, then its task stops.

        At shutdown the HTTP server waits for open responses before it stops; a held stream
        would keep it waiting for as long as the user thinks. How many calls were ended.
        """
        ended = 0
        for held in list(self._calls):
            held.end_reason = reason
            if held.task is not None:
                held.task.cancel()
            ended += 1
        return ended

    @property
    def open_streams(self) -> int:
        """SSE streams of held calls open now."""
        return sum(1 for held in self._calls if held.streaming)

    def waiting_calls(self) -> int:
        """Held calls waiting for a client's answer now."""
        return sum(1 for held in self._calls if held.waiting_for)

    def waiting_memory_bytes(self) -> int:
        """Estimated bytes the calls waiting for an answer keep alive."""
        return sum(held.held_bytes for held in self._calls if held.waiting_for)

    def measure(self, held: HeldCall) -> None:
        """Estimate the bytes a waiting call keeps alive (see `server.legacy.footprint`)."""
        if held.waiting_for:
            roots = [r for r in (held, held.task) if r is not None]
            held.held_bytes = held_bytes(*roots, shared=self.shared)

"""The legacy protocol era (2025-11-25): sessions, and tool calls held open on SSE streams.

This is how servers asked for input before MRTR, kept so the lab can measure it:

1. `initialize` opens a session (`Mcp-Session-Id`); every later request names it.
2. A `tools/call` whose tool asks for input is answered with an SSE stream. The tool's
   `ctx.elicit(...)` sends an `elicitation/create` JSON-RPC *request* on that stream (with
   an id of the server's choosing) and the coroutine waits, holding its memory and the
   stream, while the user thinks.
3. The client POSTs its JSON-RPC *response* as a separate HTTP request (answered 202). A
   load balancer may send it to any replica; the `LegacyStore` gets it to the waiting call
   (or says honestly that it cannot).
4. The tool continues and the stream ends with the call's result.

The tool code is the very same as under MRTR: only the context's channel differs
(`SseChannel` here, `MrtrChannel` there).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from server.config import ServerConfig
from server.core.call import Call, Method
from server.core.catalog import Catalog
from server.core.context import LOG_LEVELS, Replica
from server.core.dispatch import Dispatcher
from server.core.methods import SERVER_INFO, Methods
from server.core.metrics import ServerMetrics
from server.core.store import StoreUnavailable
from server.legacy.channel import HeldCall, HeldResponse, SseAttempt, SseChannel
from server.legacy.footprint import held_bytes
from server.legacy.metrics import LegacyMetrics
from server.legacy.store import Delivery, Session, TooManySessions, open_store
from server.legacy.wire import (
    CATALOG_METHODS,
    HOLDING_METHODS,
    INSTRUCTIONS,
    legacy_result,
)
from server.protocol import headers as rules
from server.protocol import jsonrpc
from server.protocol.headers import SESSION_HEADER
from server.protocol.jsonrpc import Message, RpcError, invalid_params, too_many_requests
from server.protocol.versions import LEGACY_VERSION
from server.transport import streamable as transport

log = logging.getLogger("server.legacy")


class LegacyEra:
    """The 2025-11-25 side of one replica: sessions, held calls, answer routing."""

    def __init__(
        self,
        config: ServerConfig,
        catalog: Catalog,
        replica: Replica,
        metrics: ServerMetrics,
        dispatcher: Dispatcher,
    ) -> None:
        self.config = config
        self.replica_id = config.replica_id
        self.server_metrics = metrics
        #: Runs a method as the server runs every method (in-flight count, errors, metrics).
        self.dispatcher = dispatcher
        self.store = open_store(
            config.legacy_store,
            replica_id=config.replica_id,
            session_ttl_s=config.legacy_session_ttl_s,
            answer_timeout_s=config.legacy_answer_timeout_s,
            timeout_s=config.legacy_store_timeout_s,
        )
        # The same catalog methods as 2026-07-28, run through an SSE attempt instead.
        self.methods = Methods(
            catalog,
            SseAttempt(replica),
            supported_versions=[LEGACY_VERSION],
            list_ttl_ms=config.list_ttl_ms,
        )
        self.table = {name: self.methods.table[name] for name in CATALOG_METHODS}
        self.held: set[HeldCall] = set()
        self._request_ids = itertools.count(1)
        # Request ids are unique across replicas, so answers can be routed by them.
        self._id_prefix = secrets.token_hex(4)
        # What every call shares, left out of a held call's footprint: this era, what
        # serves methods, the catalog with its tools, the configuration.
        self._shared = (
            self,
            dispatcher,
            self.methods,
            self.store,
            catalog,
            *catalog.tools.values(),
            *catalog.prompts.values(),
            *catalog.resources.values(),
            *catalog.templates,
            config,
            replica,
            metrics,
        )
        self.metrics = LegacyMetrics(metrics, self)

    def capabilities(self) -> dict[str, Any]:
        """What this server offers a 2025-11-25 client at initialize."""
        return {
            **self.methods.capabilities(),
            "resources": {"listChanged": False, "subscribe": True},
            "logging": {},
        }

    # -- health ---------------------------------------------------------------------------

    @property
    def open_streams(self) -> int:
        """SSE streams of held calls open now."""
        return sum(1 for held in self.held if held.streaming)

    def local_sessions(self) -> int:
        return self.store.local_sessions()

    def waiting_calls(self) -> int:
        return sum(1 for held in self.held if held.waiting_for)

    def waiting_memory_bytes(self) -> int:
        return sum(held.held_bytes for held in self.held if held.waiting_for)

    def health(self) -> dict[str, Any]:
        """What `/healthz` reports about legacy sessions and held calls (drains wait on these)."""
        return {
            "legacy_store": self.store.kind,
            "open_sessions": self.local_sessions(),
            "open_streams": self.open_streams,
            "waiting_calls": self.waiting_calls(),
            "waiting_memory_bytes": self.waiting_memory_bytes(),
        }

    def measure(self, held: HeldCall) -> None:
        """Estimate the bytes a waiting call keeps alive (see `server.legacy.footprint`)."""
        if held.waiting_for:
            roots = [r for r in (held, held.task) if r is not None]
            held.held_bytes = held_bytes(*roots, shared=self._shared)

    def new_request_id(self) -> str:
        return f"{self._id_prefix}-{next(self._request_ids)}"

    async def forget(self, session_id: str, request_id: str) -> None:
        """Stop waiting for an answer; a store failure here is counted, not raised."""
        try:
            await self.store.forget(session_id, request_id)
        except StoreUnavailable as exc:
            self.metrics.store_errors.labels(exc.operation).inc()

    def end_held_calls(self, reason: str) -> int:
        """End every held call now: a JSON-RPC error on its stream, then its task stops.

        At shutdown the HTTP server waits for open responses before it stops; a held stream
        would keep it waiting for as long as the user thinks. How many calls were ended.
        """
        ended = 0
        for held in list(self.held):
            held.end_reason = reason
            if held.task is not None:
                held.task.cancel()
            ended += 1
        return ended

    async def close(self) -> None:
        self.end_held_calls("the server is shutting down")
        await self.store.close()

    # -- the request path -----------------------------------------------------------------

    async def post(self, request: Request, payload: Any, principal: str) -> Response:
        """Serve one 2025-11-25 message POSTed to /mcp."""
        try:
            message = jsonrpc.parse_message(payload)
            if isinstance(message, Message) and message.method == "initialize":
                return await self._initialize(message, principal)
            try:
                session = await self._session(request, principal)
            except RpcError:
                if isinstance(message, jsonrpc.Response):
                    self.metrics.answers.labels("unknown_session").inc()
                raise
            if isinstance(message, jsonrpc.Response):
                return await self._take_answer(session, message, payload)
            if message.is_notification:
                self._notification(session, message)
                return Response(status_code=202)
            return await self._request(request, session, message)
        except StoreUnavailable as exc:
            self.metrics.store_errors.labels(exc.operation).inc()
            if isinstance(payload, dict) and "method" not in payload:
                self.metrics.answers.labels("store_error").inc()
            error = RpcError(jsonrpc.INTERNAL_ERROR, str(exc), http_status=503)
            return transport.error_response(jsonrpc.request_id_of(payload), error)
        except RpcError as error:
            return transport.error_response(jsonrpc.request_id_of(payload), error)
        except Exception:
            # A bug must not reset the connection: the client gets a JSON-RPC error.
            log.exception("internal error serving a legacy request")
            internal = RpcError(jsonrpc.INTERNAL_ERROR, "Internal error", http_status=500)
            return transport.error_response(jsonrpc.request_id_of(payload), internal)

    async def delete(self, request: Request, principal: str) -> Response:
        """End a session (DELETE with its id): its held calls stop, later requests get 404."""
        try:
            session = await self._session(request, principal)
            await self.store.end_session(session.session_id)
        except StoreUnavailable as exc:
            self.metrics.store_errors.labels(exc.operation).inc()
            return transport.error_response(
                None, RpcError(jsonrpc.INTERNAL_ERROR, str(exc), http_status=503)
            )
        except RpcError as error:
            return transport.error_response(None, error)
        self.metrics.sessions.labels("deleted").inc()
        for held in list(self.held):
            if held.session_id == session.session_id and held.task is not None:
                held.task.cancel()
        return Response(status_code=204)

    async def _initialize(self, message: Message, principal: str) -> Response:
        params = message.params
        capabilities = params.get("capabilities", {})
        client_info = params.get("clientInfo", {})
        if not isinstance(capabilities, dict) or not isinstance(client_info, dict):
            raise invalid_params("initialize needs capabilities and clientInfo objects")
        if message.is_notification:
            raise RpcError(jsonrpc.INVALID_REQUEST, "initialize is a request", http_status=400)
        session = Session(
            session_id=secrets.token_urlsafe(24),
            principal=principal,
            protocol_version=LEGACY_VERSION,
            client_capabilities=capabilities,
            client_info=client_info,
        )
        limit = self.config.max_sessions_per_principal
        try:
            await self.store.create_session(session, max_per_principal=limit)
        except TooManySessions as exc:
            refusal = f"Too many sessions open for this principal (limit {limit}): end one first"
            raise too_many_requests(refusal, limit) from exc
        self.metrics.sessions.labels("created").inc()
        self.server_metrics.count_request("initialize", "complete")
        result = {
            # The only version this era speaks; a client that wants another disconnects.
            "protocolVersion": LEGACY_VERSION,
            "capabilities": self.capabilities(),
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }
        response = transport.json_response(jsonrpc.result_response(message.id, result))
        response.headers[SESSION_HEADER] = session.session_id
        return response

    async def _session(self, request: Request, principal: str) -> Session:
        session_id = rules.header(request.headers, SESSION_HEADER)
        if not session_id:
            raise RpcError(
                jsonrpc.INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required (send initialize first)",
                http_status=400,
            )
        session = await self.store.session(session_id)
        # A session is its opener's: to anyone else it does not exist.
        if session is None or session.principal != principal:
            raise RpcError(
                jsonrpc.INVALID_REQUEST,
                f"Session not found on replica {self.replica_id} (legacy store: {self.store.kind})",
                http_status=404,
            )
        return session

    async def _take_answer(
        self, session: Session, answer: jsonrpc.Response, payload: dict[str, Any]
    ) -> Response:
        """A client's JSON-RPC response to a request the server sent on a stream."""
        outcome = await self.store.deliver(session.session_id, str(answer.id), payload)
        self.metrics.answers.labels(outcome.value).inc()
        if outcome is Delivery.UNKNOWN_REQUEST:
            raise RpcError(
                jsonrpc.INVALID_REQUEST,
                f"No call waits for an answer to request {answer.id!r} "
                f"(replica {self.replica_id}, legacy store: {self.store.kind})",
                {"requestId": answer.id},
                http_status=400,
            )
        return Response(status_code=202)

    def _notification(self, session: Session, message: Message) -> None:
        if message.method == "notifications/cancelled":
            target = message.params.get("requestId")
            for held in list(self.held):
                if held.session_id == session.session_id and held.rpc_id == target and held.task:
                    held.task.cancel()

    async def _request(self, request: Request, session: Session, message: Message) -> Response:
        rid = message.id
        if message.method == "ping":
            return transport.json_response(jsonrpc.result_response(rid, {}))
        if message.method in ("logging/setLevel", "resources/subscribe", "resources/unsubscribe"):
            await self._update_session(session, message)
            return transport.json_response(jsonrpc.result_response(rid, {}))
        method = self.table.get(message.method)
        if method is None:
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {message.method}")
        meta = message.params.get("_meta")
        call = Call(
            message=message,
            principal=session.principal,
            client_capabilities=session.client_capabilities,
            headers=request.headers,
            progress_token=meta.get("progressToken") if isinstance(meta, dict) else None,
            log_level=session.log_level,
            disconnected=request.is_disconnected,
        )
        if message.method in HOLDING_METHODS:
            return await self._hold(call, method, session)
        response = await self.dispatcher.serve(call, method)
        response["result"] = legacy_result(response["result"])
        return transport.json_response(response)

    async def _update_session(self, session: Session, message: Message) -> None:
        params = message.params
        if message.method == "logging/setLevel":
            level = params.get("level")
            if not isinstance(level, str) or level not in LOG_LEVELS:
                raise invalid_params(f"level must be one of {', '.join(LOG_LEVELS)}")
            session.log_level = level
        else:
            uri = params.get("uri")
            if not isinstance(uri, str):
                raise invalid_params(f"{message.method} needs a uri string")
            subscribed = set(session.subscriptions)
            if message.method == "resources/subscribe":
                subscribed.add(uri)
            else:
                subscribed.discard(uri)
            session.subscriptions = sorted(subscribed)
        await self.store.save_session(session)

    async def _hold(self, call: Call, method: Method, session: Session) -> Response:
        """Run a call that may ask for input: JSON if it never does, else an SSE stream."""
        limit = self.config.max_held_calls_per_principal
        if limit and sum(1 for other in self.held if other.principal == call.principal) >= limit:
            # Each held call keeps tens of kilobytes and a connection while nobody answers.
            raise too_many_requests(
                f"Too many calls held open for this principal (limit {limit}): "
                "answer or cancel one first",
                limit,
            )
        held = HeldCall(session.session_id, call.message.id, call.principal)
        call.notify = held.emit
        call.channel = SseChannel(self, held, session)

        async def run() -> None:
            try:
                response = await self.dispatcher.serve(call, method)
                response["result"] = legacy_result(response["result"])
            except RpcError as error:
                response = jsonrpc.error_response(call.message.id, error)
            except asyncio.CancelledError:
                # Cancelled by the client, a DELETE, the stream closing or a shutdown: the
                # stream ends with an error saying so.
                reason = held.end_reason or "the call was cancelled"
                ended = RpcError(jsonrpc.INTERNAL_ERROR, reason)
                await held.finish(jsonrpc.error_response(call.message.id, ended))
                raise
            await held.finish(response)

        def start() -> None:
            held.task = asyncio.create_task(run())
            held.task.add_done_callback(lambda _: self.held.discard(held))

        self.held.add(held)
        return HeldResponse(
            held,
            start,
            keepalive_s=self.config.legacy_keepalive_interval_s,
            cancel_wait_s=self.config.legacy_store_timeout_s,
        )

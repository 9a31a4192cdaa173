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
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from server.config import ServerConfig
from server.core.call import Call, Method
from server.core.catalog import Catalog
from server.core.context import Replica
from server.core.dispatch import Dispatcher
from server.core.methods import Methods
from server.core.metrics import ServerMetrics
from server.core.store import StoreUnavailable, store_error
from server.legacy.channel import Asking, SseAttempt, SseChannel
from server.legacy.dialect import CATALOG_METHODS, HOLDING_METHODS, legacy_result
from server.legacy.held import HeldCall, HeldCalls, HeldResponse
from server.legacy.metrics import LegacyMetrics
from server.legacy.sessions import SESSION_METHODS, Sessions
from server.legacy.store import Delivery, Session, SubscriptionLimits
from server.legacy.store_choice import open_store
from server.protocol import jsonrpc
from server.protocol.headers import check_route_headers
from server.protocol.jsonrpc import Message, RpcError, too_many_requests
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
            answer_timeout_s=config.answer_timeout_s,
            timeout_s=config.legacy_store_timeout_s,
            max_memory_bytes=config.max_legacy_store_bytes,
        )
        # The same catalog methods as 2026-07-28, run through an SSE attempt instead.
        self.methods = Methods(
            catalog,
            SseAttempt(replica),
            supported_versions=[LEGACY_VERSION],
            list_ttl_ms=config.list_ttl_ms,
        )
        self.table = {name: self.methods.table[name] for name in CATALOG_METHODS}
        self.held = HeldCalls()
        self.metrics = LegacyMetrics(metrics, self.held, self.store.local_sessions)
        self.asking = Asking(
            self.held,
            self.store,
            self.metrics,
            max_rounds=config.max_rounds,
            answer_timeout_s=config.answer_timeout_s,
        )
        self.sessions = Sessions(
            self.store,
            self.metrics,
            metrics,
            self.capabilities,
            replica_id=config.replica_id,
            max_per_principal=config.max_sessions_per_principal,
            max_client_info_bytes=config.max_client_info_bytes,
            max_capabilities_bytes=config.max_client_capabilities_bytes,
            max_subscription_uri_bytes=config.max_subscription_uri_bytes,
            subscription_limits=SubscriptionLimits(
                max_per_session=config.max_subscriptions_per_session,
                max_bytes_per_principal=config.max_subscription_bytes_per_principal,
            ),
        )
        # What every call shares, left out of a held call's footprint: this era, what
        # serves methods, the catalog with its tools, the configuration.
        self.held.shared = (
            self,
            self.held,
            self.asking,
            self.sessions,
            self.metrics,
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

    def capabilities(self) -> dict[str, Any]:
        """What this server offers a 2025-11-25 client at initialize."""
        return {
            **self.methods.capabilities(),
            "resources": {"listChanged": False, "subscribe": True},
            "logging": {},
        }

    # -- health ---------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """What `/healthz` reports about legacy sessions and held calls (drains wait on these)."""
        return {
            "legacy_store": self.store.kind,
            "open_sessions": self.store.local_sessions(),
            "open_streams": self.held.open_streams,
            "waiting_calls": self.held.waiting_calls(),
            "waiting_memory_bytes": self.held.waiting_memory_bytes(),
        }

    def end_held_calls(self, reason: str) -> int:
        """End every held call now (see `HeldCalls.end_all`); how many were ended."""
        return self.held.end_all(reason)

    async def close(self) -> None:
        self.end_held_calls("the server is shutting down")
        await self.store.close()

    # -- the request path -----------------------------------------------------------------

    async def post(self, request: Request, payload: Any, principal: str) -> Response:
        """Serve one 2025-11-25 message POSTed to /mcp."""
        try:
            message = jsonrpc.parse_message(payload)
            if isinstance(message, Message):
                check_route_headers(request.headers, message, required=False)
            if isinstance(message, Message) and message.method == "initialize":
                return await self.sessions.initialize(message, principal)
            try:
                session = await self.sessions.of(request.headers, principal)
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
            return transport.error_response(jsonrpc.request_id_of(payload), store_error(exc))
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
            session = await self.sessions.of(request.headers, principal)
            await self.store.end_session(session.session_id)
        except StoreUnavailable as exc:
            self.metrics.store_errors.labels(exc.operation).inc()
            return transport.error_response(None, store_error(exc))
        except RpcError as error:
            return transport.error_response(None, error)
        self.metrics.sessions.labels("deleted").inc()
        self.held.cancel_session(session.session_id)
        return Response(status_code=204)

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
            self.held.cancel_request(session.session_id, message.params.get("requestId"))

    async def _request(self, request: Request, session: Session, message: Message) -> Response:
        rid = message.id
        if message.method == "ping":
            return transport.json_response(jsonrpc.result_response(rid, {}))
        if message.method in SESSION_METHODS:
            await self.sessions.update(session, message)
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

    async def _hold(self, call: Call, method: Method, session: Session) -> Response:
        """Run a call that may ask for input: JSON if it never does, else an SSE stream."""
        limit = self.config.max_held_calls_per_principal
        if limit and self.held.held_by(call.principal) >= limit:
            # Each held call keeps tens of kilobytes and a connection while nobody answers.
            self.server_metrics.stored_refusals.labels("held_calls", "per_principal").inc()
            raise too_many_requests(
                f"Too many calls held open for this principal (limit {limit}): "
                "answer or cancel one first",
                limit,
            )
        total = self.config.max_held_calls_per_replica
        if total and len(self.held) >= total:
            # Many principals, each within its own limit, must not hold every connection.
            self.server_metrics.totals_reached.labels("held_calls").inc()
            raise too_many_requests(
                f"This server holds as many calls open as it may ({total}, all callers "
                "together): try again shortly",
                total,
            )
        held = HeldCall(session.session_id, call.message.id, call.principal)
        call.notify = held.emit
        call.channel = SseChannel(self.asking, held, session)

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

"""Legacy sessions: opened by `initialize`, named by `Mcp-Session-Id` on every later request.

A session keeps its client's capabilities, log level and subscriptions in the legacy store,
so that with Redis every replica knows every session. A session is its opener's: to any
other principal it does not exist.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

from starlette.responses import Response

from server.core.context import LOG_LEVELS
from server.core.methods import SERVER_INFO
from server.core.metrics import ServerMetrics
from server.legacy.dialect import INSTRUCTIONS
from server.legacy.metrics import LegacyMetrics
from server.legacy.store import (
    LegacyStore,
    Session,
    SubscriptionLimits,
    SubscriptionRefused,
    TooManySessions,
    uri_bytes,
)
from server.protocol import headers as rules
from server.protocol import jsonrpc
from server.protocol.headers import SESSION_HEADER
from server.protocol.jsonrpc import (
    Message,
    RpcError,
    invalid_params,
    json_size,
    too_large,
    too_many_requests,
)
from server.protocol.versions import LEGACY_VERSION
from server.transport import streamable as transport

#: Methods that change a session and answer with an empty result.
SESSION_METHODS = ("logging/setLevel", "resources/subscribe", "resources/unsubscribe")


class Sessions:
    """The sessions of the legacy era, as one replica opens, finds and updates them."""

    def __init__(
        self,
        store: LegacyStore,
        metrics: LegacyMetrics,
        server_metrics: ServerMetrics,
        capabilities: Callable[[], dict[str, Any]],
        *,
        replica_id: str,
        max_per_principal: int,
        max_client_info_bytes: int,
        max_capabilities_bytes: int,
        max_subscription_uri_bytes: int = 0,
        subscription_limits: SubscriptionLimits | None = None,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.server_metrics = server_metrics
        #: What the server offers a 2025-11-25 client, answered at initialize.
        self.capabilities = capabilities
        self.replica_id = replica_id
        self.max_per_principal = max_per_principal
        #: What a session may keep of its client, kept as long as the session lives.
        self.max_client_info_bytes = max_client_info_bytes
        self.max_capabilities_bytes = max_capabilities_bytes
        #: Longest resource URI a session may subscribe to (0: no cap).
        self.max_subscription_uri_bytes = max_subscription_uri_bytes
        self.subscription_limits = subscription_limits or SubscriptionLimits()

    async def initialize(self, message: Message, principal: str) -> Response:
        """Open a session for `principal`; its id comes back in `Mcp-Session-Id`."""
        params = message.params
        capabilities = params.get("capabilities", {})
        client_info = params.get("clientInfo", {})
        if not isinstance(capabilities, dict) or not isinstance(client_info, dict):
            raise invalid_params("initialize needs capabilities and clientInfo objects")
        if message.is_notification:
            raise RpcError(jsonrpc.INVALID_REQUEST, "initialize is a request", http_status=400)
        for what, cap, value, limit in (
            ("clientInfo", "client_info_bytes", client_info, self.max_client_info_bytes),
            ("capabilities", "capabilities_bytes", capabilities, self.max_capabilities_bytes),
        ):
            size = json_size(value)
            if size > limit:
                self.refused(cap)
                raise too_large(what, size, limit)
        session = Session(
            session_id=secrets.token_urlsafe(24),
            principal=principal,
            protocol_version=LEGACY_VERSION,
            client_capabilities=capabilities,
            client_info=client_info,
        )
        limit = self.max_per_principal
        try:
            await self.store.create_session(session, max_per_principal=limit)
        except TooManySessions as exc:
            self.refused("sessions_per_principal")
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

    def refused(self, cap: str) -> None:
        """Count a refusal at one of the legacy store's caps (`mcp_stored_refusals`)."""
        self.server_metrics.stored_refusals.labels("legacy", cap).inc()

    async def of(self, headers: Mapping[str, str], principal: str) -> Session:
        """The session a request names, if `principal` opened it (else 400 or 404)."""
        session_id = rules.header(headers, SESSION_HEADER)
        if not session_id:
            raise RpcError(
                jsonrpc.INVALID_REQUEST,
                "Bad Request: Mcp-Session-Id header is required (send initialize first)",
                http_status=400,
            )
        session = await self.store.session(session_id, principal)
        # A session is its opener's: to anyone else it does not exist.
        if session is None or session.principal != principal:
            raise RpcError(
                jsonrpc.INVALID_REQUEST,
                f"Session not found on replica {self.replica_id} (legacy store: {self.store.kind})",
                http_status=404,
            )
        return session

    async def update(self, session: Session, message: Message) -> None:
        """Apply one of `SESSION_METHODS`: a log level, or a resource (un)subscription."""
        params = message.params
        if message.method == "logging/setLevel":
            level = params.get("level")
            if not isinstance(level, str) or level not in LOG_LEVELS:
                raise invalid_params(f"level must be one of {', '.join(LOG_LEVELS)}")
            session.log_level = level
            await self.store.save_session(session)
            return
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params(f"{message.method} needs a uri string")
        if message.method == "resources/unsubscribe":
            await self.store.unsubscribe(session, uri)
            return
        await self._subscribe(session, uri)

    async def _subscribe(self, session: Session, uri: str) -> None:
        """Keep a subscription under the caps on its URI, its session and its principal."""
        size = uri_bytes(uri)
        limit = self.max_subscription_uri_bytes
        if limit and size > limit:
            self.refused("subscription_uri_bytes")
            raise RpcError(
                jsonrpc.INVALID_PARAMS,
                f"uri is {size} bytes; this server subscribes to URIs of at most {limit}",
                {"limit": limit, "cap": "subscription_uri_bytes"},
                http_status=413,
            )
        try:
            await self.store.subscribe(session, uri, self.subscription_limits)
        except SubscriptionRefused as refused:
            self.refused(refused.cap)
            if refused.cap == "subscriptions_per_session":
                # Too many of a countable thing, as too many sessions: 429.
                code, status = jsonrpc.TOO_MANY_REQUESTS, 429
                refusal = (
                    f"This session already subscribes to {refused.limit} resources (limit "
                    f"{refused.limit}): unsubscribe from one first"
                )
            else:
                # Too much kept, as any stored size over its limit: -32602 and 413.
                code, status = jsonrpc.INVALID_PARAMS, 413
                refusal = (
                    f"This principal's subscriptions would take {refused.would_be} bytes; this "
                    f"server keeps at most {refused.limit} (unsubscribe or end a session first)"
                )
            data = {"limit": refused.limit, "cap": refused.cap}
            raise RpcError(code, refusal, data, http_status=status) from refused

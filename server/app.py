"""The ASGI app of one replica: `POST /mcp`, `GET /healthz`, `GET /metrics`.

The request path, top to bottom, is `McpServer.post`: check the host, read the body,
authenticate, parse JSON-RPC, check the 2026-07-28 transport rules, dispatch the method,
encode the result. POST /mcp reaches it as a raw ASGI app (`McpServer.serve_post`), not
through Starlette's router (`server.transport.routing`). Everything a replica needs
(catalog, sealer, keys, metrics) hangs off one `McpServer`; replicas share nothing but
their configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from server.config import ServerConfig
from server.core.call import Call, Method
from server.core.catalog import Catalog
from server.core.context import Replica
from server.core.cpu_pool import CpuPool
from server.core.dispatch import Dispatcher
from server.core.methods import Methods
from server.core.metrics import CONTENT_TYPE_LATEST, ServerMetrics
from server.core.store import StoreUnavailable
from server.legacy.dialect import ends_legacy_session, is_legacy_request
from server.legacy.era import LegacyEra
from server.mrtr.runner import MrtrAttempt
from server.mrtr.state import StateSealer
from server.protocol import headers as rules
from server.protocol import jsonrpc
from server.protocol.jsonrpc import METHOD_NOT_FOUND, Message, RpcError
from server.protocol.versions import SUPPORTED_VERSIONS
from server.tasks.attempt import TaskAttempt
from server.tasks.methods import TaskMethods
from server.tasks.metrics import MeteredTaskStore, TaskMetrics
from server.tasks.store_choice import open_task_store
from server.tasks.worker import TaskWorker, sweep_periodically
from server.tools.conformance import add_conformance_fixtures
from server.tools.crunch import crunch_units
from server.tools.demo import demo_catalog
from server.tools.quote import spend_cpu
from server.transport import streamable as transport
from server.transport.auth import ANONYMOUS, Authenticator
from server.transport.guard import Guard, Refused
from server.transport.routing import McpApp

log = logging.getLogger("server")
#: Methods whose handlers may send progress or log notifications before their result.
STREAMING_METHODS = {"tools/call", "prompts/get", "resources/read"}


def build_catalog(config: ServerConfig) -> Catalog:
    """The demo catalog, preceded by the conformance fixtures when asked for."""
    demos = demo_catalog(config.tool_version)
    if not config.conformance:
        return demos
    catalog = Catalog()
    add_conformance_fixtures(catalog)
    catalog.tools.update(demos.tools)
    catalog.prompts.update(demos.prompts)
    catalog.resources.update(demos.resources)
    catalog.templates.extend(demos.templates)
    return catalog


class McpServer:
    """One replica of the lab's MCP server, composed from its parts in one place.

    The 2026-07-28 path runs handlers through a task attempt wrapping an MRTR attempt;
    the 2025-11-25 path (`LegacyEra`) through an SSE attempt. Both run their methods with
    the same `Dispatcher`, behind the same `Guard`.
    """

    def __init__(self, config: ServerConfig, catalog: Catalog | None = None) -> None:
        self.config = config
        self.catalog = catalog if catalog is not None else build_catalog(config)
        self.metrics = ServerMetrics(config.replica_id)
        self.metrics.info.labels(config.replica_id, str(config.tool_version)).set(1)
        self.dispatcher = dispatcher = Dispatcher(self.metrics)
        self.metrics.in_flight.set_function(lambda: dispatcher.in_flight)
        self.draining = False
        self._loop: asyncio.AbstractEventLoop | None = None
        # The public development key and secret serve this machine only, unless allowed.
        public_keys = config.public_development_settings()
        self.guard = Guard(
            Authenticator(config.jwt_secret, require_exp=not config.jwt_allow_no_exp),
            loopback_only=config.loopback_only,
            allowed_origins=config.allowed_origins,
            require_auth=not config.anonymous_allowed,
            rate_per_s=config.requests_per_s_per_principal,
            public_keys=() if config.allow_development_keys else public_keys,
            metrics_token=config.metrics_token,
        )
        self.sealer = StateSealer(config.state_keys, config.state_ttl_s)
        self.cpu = CpuPool(
            workers=config.cpu_workers,
            inline_max_ms=config.cpu_inline_max_ms,
            max_calls_per_principal=config.max_cpu_calls_per_principal,
            max_calls=config.max_cpu_calls_per_replica,
            on_full=self.metrics.totals_reached.labels("cpu_calls").inc,
            # The modules whose functions the workers run, imported as each one starts.
            preload=(spend_cpu.__module__, crunch_units.__module__),
        )
        self.replica = Replica(
            replica_id=config.replica_id,
            tool_version=config.tool_version,
            in_flight=lambda: dispatcher.in_flight,
            shed_in_flight_threshold=config.shed_in_flight_threshold,
            shed_every_units=config.shed_every_units,
            cpu=self.cpu,
        )
        task_metrics = TaskMetrics(self.metrics, lambda: self.task_worker.running)
        self.task_store = MeteredTaskStore(
            open_task_store(
                config.task_store,
                timeout_s=config.task_store_timeout_s,
                max_memory_bytes=config.max_task_store_bytes,
                volatile_ok=config.task_store_volatile,
            ),
            task_metrics,
        )
        self.task_worker = TaskWorker(
            self.task_store,
            self.catalog,
            self.replica,
            lease_s=config.task_lease_s,
            max_result_bytes=config.max_task_result_bytes,
            on_takeover=task_metrics.takeovers.inc,
        )
        mrtr = MrtrAttempt(
            self.sealer,
            self.metrics,
            self.replica,
            max_rounds=config.max_rounds,
            max_request_state_bytes=config.max_request_state_bytes,
            state_error_detail=config.state_error_detail,
            single_use=self.task_store,
        )
        attempt = TaskAttempt(
            mrtr,
            self.task_store,
            self.task_worker,
            default_ttl_ms=config.task_default_ttl_ms,
            max_ttl_ms=config.task_max_ttl_ms,
            poll_interval_ms=config.task_poll_interval_ms,
            max_tasks_per_principal=config.max_tasks_per_principal,
            max_arguments_bytes=config.max_task_arguments_bytes,
            max_capabilities_bytes=config.max_client_capabilities_bytes,
            metrics=self.metrics,
        )
        tasks = TaskMethods(
            self.task_store,
            self.task_worker,
            result_wait_s=config.task_result_wait_s,
            max_result_waits_per_principal=config.max_task_result_waits_per_principal,
            max_result_waits=config.max_task_result_waits_per_replica,
            list_page_size=config.task_list_page_size,
            anonymous=ANONYMOUS,
            max_answers_bytes=config.max_task_arguments_bytes,
            metrics=self.metrics,
        )
        self.methods = Methods(
            self.catalog,
            attempt,
            supported_versions=SUPPORTED_VERSIONS,
            list_ttl_ms=config.list_ttl_ms,
            extensions=tasks.extensions(),
        )
        self.table: dict[str, Method] = {**self.methods.table, **tasks.table}
        self.legacy = LegacyEra(config, self.catalog, self.replica, self.metrics, self.dispatcher)

    @property
    def in_flight(self) -> int:
        """Requests this replica is serving now."""
        return self.dispatcher.in_flight

    async def serve_post(self, scope: Scope, receive: Receive, send: Send) -> None:
        """POST /mcp as an ASGI app: serve the message and send the answer.

        Nothing above this catches errors (Starlette's middlewares are not on this path):
        a bug anywhere below still answers a JSON-RPC 500 and is logged and counted, and a
        client that left before its body arrived gets no answer, since nobody would read it.
        """
        try:
            response = await self.post(scope, receive)
        except ClientDisconnect:
            return
        except Exception:
            response = self._internal_error(None)
        await response(scope, receive, send)

    async def post(self, scope: Scope, receive: Receive) -> Response:
        """Serve one JSON-RPC message POSTed to /mcp (the request's ASGI scope and channel)."""
        try:
            headers, principal = self.guard.admit_request(scope)
        except Refused as refused:
            return refused.response
        try:
            body = await transport.read_body(receive, headers, self.config.max_body_bytes)
        except transport.BodyTooLarge:
            error = RpcError(jsonrpc.INVALID_REQUEST, "Request body too large", http_status=413)
            return transport.error_response(None, error)
        payload: Any = None
        try:
            payload = jsonrpc.decode(body)
            if is_legacy_request(headers, payload):
                return await self.legacy.post(Request(scope, receive), payload, principal)
            message = jsonrpc.parse_message(payload)
            if not isinstance(message, Message) or message.is_notification:
                # Notifications and stray responses need no answer in a stateless server.
                self.metrics.count_request("notification", "accepted")
                return Response(status_code=202)
            capabilities = rules.check_modern_request(headers, message, SUPPORTED_VERSIONS)
            method = self.table.get(message.method)
            if method is None:
                raise RpcError(
                    METHOD_NOT_FOUND, f"Method not found: {message.method}", http_status=404
                )
            meta = message.params["_meta"]
            call = Call(
                message=message,
                principal=principal,
                client_capabilities=capabilities,
                headers=headers,
                progress_token=meta.get("progressToken"),
                log_level=meta.get(rules.META_LOG_LEVEL),
                disconnected=transport.Departure(receive),
            )
            if message.method in STREAMING_METHODS and (
                call.progress_token is not None or call.log_level is not None
            ):
                # Notifications can only travel on an SSE response stream.
                return transport.sse_response(self._stream(call, method))
            return transport.json_response(await self.dispatcher.serve(call, method))
        except RpcError as error:
            method_name = payload.get("method") if isinstance(payload, dict) else None
            label = (
                method_name
                if isinstance(method_name, str) and method_name in self.table
                else "other"
            )
            self.metrics.count_request(label, "error")
            return transport.error_response(jsonrpc.request_id_of(payload), error)
        except Exception:
            return self._internal_error(payload)

    def _internal_error(self, payload: Any) -> Response:
        """A bug must not reset the connection: logged, counted, and a JSON-RPC 500."""
        log.exception("internal error serving a request")
        self.metrics.count_request("other", "error")
        internal = RpcError(jsonrpc.INTERNAL_ERROR, "Internal error", http_status=500)
        return transport.error_response(jsonrpc.request_id_of(payload), internal)

    async def _stream(self, call: Call, method: Method) -> AsyncIterator[bytes]:
        """Serve a call whose notifications (progress) go on an SSE stream before its result."""
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        call.notify = queue.put

        async def run() -> None:
            try:
                await queue.put(await self.dispatcher.serve(call, method))
            except RpcError as error:
                await queue.put(jsonrpc.error_response(call.message.id, error))
            finally:
                await queue.put(None)

        task = asyncio.create_task(run())
        try:
            while (message := await queue.get()) is not None:
                yield transport.sse_event(message)
        finally:
            if not task.done():
                task.cancel()

    async def healthz(self, request: Request) -> Response:
        """Liveness and identity for load balancers: 503 while draining."""
        try:
            self.guard.admit_probe(request.scope)
        except Refused as refused:
            return refused.response
        body = {
            "status": "draining" if self.draining else "ok",
            "replica_id": self.config.replica_id,
            "tool_version": self.config.tool_version,
            "in_flight": self.dispatcher.in_flight,
            **self.legacy.health(),
        }
        return JSONResponse(body, status_code=503 if self.draining else 200)

    async def metrics_endpoint(self, request: Request) -> Response:
        try:
            self.guard.admit_probe(request.scope, metrics=True)
        except Refused as refused:
            return refused.response
        return Response(self.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Start the task sweep; at shutdown stop task runs and held legacy calls, close stores."""
        sweeper = asyncio.create_task(
            sweep_periodically(self.task_store, self.config.task_sweep_interval_s)
        )
        self._loop = asyncio.get_running_loop()
        if not self.config.task_store_volatile:
            await self._check_task_store()
        try:
            yield
        finally:
            sweeper.cancel()
            await self.task_worker.close()
            await self.task_store.close()
            await self.legacy.close()
            self.cpu.close()

    async def _check_task_store(self) -> None:
        """Refuse to start on a task store that could lose acknowledged tasks."""
        try:
            problems = await self.task_store.durability_problems()
        except StoreUnavailable:
            # An outage is not a setting: serve, and answer task requests with 503 meanwhile.
            log.warning("the task store is unreachable: its durability is not checked")
            return
        if problems:
            raise RuntimeError(
                "the task store could lose tasks it acknowledged: "
                + "; ".join(problems)
                + ". Run Redis with appendonly yes and maxmemory-policy noeviction, "
                "or pass --task-store-volatile if losing them is intended."
            )

    def begin_shutdown(self) -> None:
        """Called from a signal handler: drain, and end held legacy calls on the loop."""
        self.draining = True
        if self._loop is not None:
            self._loop.call_soon_threadsafe(
                self.legacy.end_held_calls, "the server is shutting down"
            )

    async def not_allowed(self, request: Request) -> Response:
        """GET and DELETE on /mcp: a stateless server has no stream or session to offer."""
        return Response(status_code=405, headers={"Allow": "POST"})

    async def delete(self, request: Request) -> Response:
        """DELETE /mcp ends a legacy session; without one (or under 2026-07-28) it is 405."""
        if not ends_legacy_session(request.headers):
            return await self.not_allowed(request)
        try:
            _, principal = self.guard.admit_request(request.scope)
        except Refused as refused:
            return refused.response
        return await self.legacy.delete(request, principal)


def create_app(config: ServerConfig | None = None, catalog: Catalog | None = None) -> Starlette:
    """The ASGI app of one replica; `app.state.server` is its `McpServer`."""
    server = McpServer(config if config is not None else ServerConfig(), catalog)
    app = McpApp(
        post_mcp=server.serve_post,
        routes=[
            Route("/mcp", server.not_allowed, methods=["GET"]),
            Route("/mcp", server.delete, methods=["DELETE"]),
            Route("/healthz", server.healthz, methods=["GET"]),
            Route("/metrics", server.metrics_endpoint, methods=["GET"]),
        ],
        lifespan=server.lifespan,
    )
    app.state.server = server
    return app

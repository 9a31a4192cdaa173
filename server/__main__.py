"""Command line: run a replica, mint a development token, or run the conformance suite.

python -m server --host 127.0.0.1 --port 8000 [--replica-id ID] [--tool-version 1|2]
                 [--conformance] [--shed-every-units N] [--shed-in-flight N]
                 [--task-store memory|redis://HOST:PORT/DB] [--task-poll-interval-ms MS]
                 [--task-lease-s S] [--task-list-page-size N]
                 [--legacy-store memory|redis://HOST:PORT/DB] [--legacy-answer-timeout-s S]
                 [--legacy-keepalive-s S]
python -m server token NAME
python -m server conformance [--scenario NAME ... [--spec-version 2025-11-25]
                             | --requirements 2026-07-28|2025-11-25]
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import sys
from collections.abc import Callable
from typing import Any

from server.config import ConfigError, ServerConfig


def _serve(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--replica-id", default=None, help="default: replica-<port>")
    parser.add_argument("--tool-version", type=int, choices=(1, 2), default=1)
    parser.add_argument("--conformance", action="store_true", help="add the suite's fixtures")
    parser.add_argument("--shed-every-units", type=int, default=0, metavar="N")
    parser.add_argument("--shed-in-flight", type=int, default=0, metavar="N")
    parser.add_argument(
        "--task-store",
        default=ServerConfig.task_store,
        metavar="memory|redis://HOST:PORT/DB",
        help="where tasks (persistent tools) live; share one Redis between replicas",
    )
    parser.add_argument(
        "--task-store-volatile",
        action="store_true",
        help="accept a Redis task store without appendonly or with eviction (loses tasks)",
    )
    parser.add_argument(
        "--task-poll-interval-ms",
        type=int,
        default=ServerConfig.task_poll_interval_ms,
        metavar="MS",
        help="how often clients should poll tasks/get",
    )
    parser.add_argument(
        "--task-lease-s",
        type=float,
        default=ServerConfig.task_lease_s,
        metavar="S",
        help="how long a running task's claim lasts; after it another replica takes over",
    )
    parser.add_argument(
        "--task-list-page-size",
        type=int,
        default=ServerConfig.task_list_page_size,
        metavar="N",
        help="most tasks in one tasks/list page",
    )
    parser.add_argument(
        "--legacy-store",
        default=ServerConfig.legacy_store,
        metavar="memory|redis://HOST:PORT/DB",
        help="where 2025-11-25 sessions and pending answers live (default: memory)",
    )
    parser.add_argument(
        "--legacy-answer-timeout-s",
        type=float,
        default=ServerConfig.legacy_answer_timeout_s,
        metavar="S",
        help="how long a held legacy call waits for each answer",
    )
    parser.add_argument(
        "--legacy-keepalive-s",
        type=float,
        default=ServerConfig.legacy_keepalive_interval_s,
        metavar="S",
        help="interval between SSE keep-alive comments on a held stream",
    )
    parser.add_argument(
        "--state-ttl-s",
        type=float,
        default=ServerConfig.state_ttl_s,
        metavar="S",
        help="how long a sealed requestState stays valid; a later retry is asked again",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a page origin (scheme://host[:port]) allowed to call; repeatable",
    )
    parser.add_argument(
        "--require-auth", action="store_true", help="refuse callers without a bearer token"
    )
    parser.add_argument(
        "--jwt-allow-no-exp", action="store_true", help="accept tokens that never expire"
    )
    parser.add_argument(
        "--allow-development-keys",
        action="store_true",
        help="serve beyond loopback with the public development key and secret",
    )
    parser.add_argument(
        "--shutdown-timeout-s",
        type=float,
        default=ServerConfig.shutdown_timeout_s,
        metavar="S",
        help="after SIGTERM, how long running requests may take before they are cut off",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=ServerConfig.max_connections,
        metavar="N",
        help="connections served at once; more get HTTP 503",
    )
    parser.add_argument(
        "--idle-timeout-s",
        type=float,
        default=ServerConfig.idle_timeout_s,
        metavar="S",
        help="how long an idle keep-alive connection stays open",
    )
    parser.add_argument(
        "--header-timeout-s",
        type=float,
        default=ServerConfig.header_timeout_s,
        metavar="S",
        help="how long a connection may take to send its request headers before it is closed",
    )
    parser.add_argument(
        "--max-held-calls-per-principal",
        type=int,
        default=ServerConfig.max_held_calls_per_principal,
        metavar="N",
        help="legacy calls one principal may hold open at once (0: no limit); more get 429",
    )
    parser.add_argument(
        "--max-sessions-per-principal",
        type=int,
        default=ServerConfig.max_sessions_per_principal,
        metavar="N",
        help="legacy sessions one principal may have open (0: no limit); more get HTTP 429",
    )
    parser.add_argument(
        "--max-tasks-per-principal",
        type=int,
        default=ServerConfig.max_tasks_per_principal,
        metavar="N",
        help="unexpired tasks one principal may keep (0: no limit); more get HTTP 429",
    )
    parser.add_argument(
        "--rate-per-principal",
        type=float,
        default=ServerConfig.requests_per_s_per_principal,
        metavar="PER_S",
        help="requests per second one principal may send (0: no limit); more get HTTP 429",
    )
    parser.add_argument("--loop", default="auto", choices=("auto", "asyncio", "uvloop"))
    parser.add_argument("--http", default="auto", choices=("auto", "h11", "httptools"))
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    try:
        config = ServerConfig(
            replica_id=args.replica_id or f"replica-{args.port}",
            tool_version=args.tool_version,
            conformance=args.conformance,
            shed_every_units=args.shed_every_units,
            shed_in_flight_threshold=args.shed_in_flight,
            task_store=args.task_store,
            task_store_volatile=args.task_store_volatile,
            task_poll_interval_ms=args.task_poll_interval_ms,
            task_lease_s=args.task_lease_s,
            task_list_page_size=args.task_list_page_size,
            loopback_only=_is_loopback(args.host),
            allowed_origins=tuple(args.allow_origin),
            require_auth=args.require_auth,
            jwt_allow_no_exp=args.jwt_allow_no_exp,
            allow_development_keys=args.allow_development_keys,
            shutdown_timeout_s=args.shutdown_timeout_s,
            max_connections=args.max_connections,
            idle_timeout_s=args.idle_timeout_s,
            header_timeout_s=args.header_timeout_s,
            max_held_calls_per_principal=args.max_held_calls_per_principal,
            max_sessions_per_principal=args.max_sessions_per_principal,
            max_tasks_per_principal=args.max_tasks_per_principal,
            requests_per_s_per_principal=args.rate_per_principal,
            legacy_store=args.legacy_store,
            legacy_answer_timeout_s=args.legacy_answer_timeout_s,
            legacy_keepalive_interval_s=args.legacy_keepalive_s,
            state_ttl_s=args.state_ttl_s,
        )
    except ConfigError as exc:
        parser.error(str(exc))
    import uvicorn

    from server.app import create_app
    from server.transport.coalescing import with_coalesced_writes
    from server.transport.header_timeout import protocol_class, with_header_timeout

    app = create_app(config)
    settings = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        loop=args.loop,
        http=with_header_timeout(
            with_coalesced_writes(protocol_class(args.http)), config.header_timeout_s
        ),
        log_level=args.log_level,
        access_log=False,
        # The replica reads neither the client's address nor the scheme, so uvicorn's
        # X-Forwarded-* rewriting (a middleware on every request) would be work for nothing.
        proxy_headers=False,
        # No "server: uvicorn" on every answer: MCP does not need it, and it tells a
        # scanner the stack.
        server_header=False,
        timeout_graceful_shutdown=math.ceil(config.shutdown_timeout_s),
        limit_concurrency=config.max_connections,
        timeout_keep_alive=math.ceil(config.idle_timeout_s),
    )
    from server.harness.process import raise_file_limit

    raise_file_limit(config.max_connections)
    _signalling_server(settings, app.state.server.begin_shutdown).run()
    return 0


def _signalling_server(settings: Any, on_exit: Callable[[], None]) -> Any:
    """A uvicorn server that also tells the app when a shutdown signal arrives.

    uvicorn waits for open responses before its lifespan shutdown; the app ends its held
    legacy streams at once instead, so the replica exits within the graceful timeout.
    """
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            on_exit()

    return Server(settings)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m server token")
    parser.add_argument("name", help="the principal (JWT sub) to mint a token for")
    parser.add_argument("--ttl-s", type=float, default=24 * 3600)
    args = parser.parse_args(argv)
    from server.transport.auth import mint_token

    print(mint_token(args.name, ServerConfig().jwt_secret, ttl_s=args.ttl_s))
    return 0


def _conformance(argv: list[str]) -> int:
    from server.harness.conformance import main

    return main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"token": _token, "conformance": _conformance}
    if argv and argv[0] in commands:
        return commands[argv[0]](argv[1:])
    return _serve(argv)


if __name__ == "__main__":
    sys.exit(main())

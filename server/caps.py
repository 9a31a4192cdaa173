"""What one caller, and all callers together, may take of a replica: the caps.

Requests a second, calls held or running at once, tasks, waits, sessions and subscriptions,
each per principal and, where many principals could together fill what each alone may not,
per replica; and the most each store keeps. Over a cap a caller hears a clear refusal (HTTP
429 or 413, a JSON-RPC error, or 507 for a full store) and a metric counts it. Stated once
like every setting (`server.flags`); `ServerConfig` builds on them.
"""

from __future__ import annotations

from dataclasses import dataclass

from server.access import AccessConfig
from server.flags import setting
from server.keys import ConfigError


@dataclass(frozen=True)
class CapsConfig(AccessConfig):
    """What one replica lets each principal, and all of them together, hold, run and keep."""

    # Sized for a client that polls a handful of tasks: each wait holds a request in flight.
    max_task_result_waits_per_principal: int = setting(
        4,
        help="seed tasks/result calls one principal may have waiting on working tasks at once "
        "on this replica; beyond it tasks/result answers at once (still working: poll "
        "tasks/get); 0: no limit",
        metavar="N",
    )
    # Many principals must not together hold what each alone may not: well under
    # --max-connections, so /healthz and other callers keep connections of their own. Each
    # wait reads the task store four times a second: at 256 a replica, the many
    # principals' waits put the users' p95 at 3.0 and 4.0 times the quiet one; at 64,
    # 2.1 and 2.8 (side by side, docs/hardening.md).
    max_task_result_waits_per_replica: int = setting(
        64,
        help="seed tasks/result calls all principals together may have waiting on working "
        "tasks at once on this replica; beyond it tasks/result answers at once (still "
        "working: poll tasks/get), counted in mcp_replica_totals_reached_total; 0: no limit",
        metavar="N",
    )
    max_cpu_calls_per_principal: int = setting(
        2,
        help="CPU-bound tool calls one principal may run in the worker processes at once on "
        "this replica; more get HTTP 429; 0: no limit",
        metavar="N",
    )
    # Each running call has one slice (5 ms) queued at most: 64 are a sixth of a second
    # of queue for two workers, and 64 connections.
    max_cpu_calls_per_replica: int = setting(
        64,
        help="CPU-bound tool calls all principals together may run in the worker processes "
        "at once on this replica; more get HTTP 429 (-32029), counted in "
        "mcp_replica_totals_reached_total; 0: no limit",
        metavar="N",
    )
    # On by default, sized for one person's client: every anonymous caller is one principal,
    # so the load test gives each simulated user a token of its own.
    max_held_calls_per_principal: int = setting(
        32,
        help="legacy calls one principal may hold open at once (each holds tens of kilobytes "
        "and a connection while nobody answers); more get HTTP 429; 0: no limit",
        metavar="N",
    )
    # Half of --max-connections: held streams never take every connection.
    max_held_calls_per_replica: int = setting(
        1024,
        help="legacy calls all principals together may hold open at once on this replica; "
        "more get HTTP 429 (-32029), counted in mcp_replica_totals_reached_total; 0: no limit",
        metavar="N",
    )
    max_sessions_per_principal: int = setting(
        100,
        help="legacy sessions one principal may have open, counted in the legacy store (so "
        "across replicas with Redis); initialize beyond it gets HTTP 429; 0: no limit",
        metavar="N",
    )
    # A hundred resources is more than a client shows at once; each URI stays for the
    # session's life (an hour idle), so the total per principal bounds what one caller keeps.
    max_subscriptions_per_session: int = setting(
        100,
        help="resources one legacy session may subscribe to (resources/subscribe); one more "
        "gets HTTP 429; 0: no limit",
        metavar="N",
    )
    # Browsers' and proxies' common limit on a URL.
    max_subscription_uri_bytes: int = setting(
        2048,
        help="longest resource URI a legacy session may subscribe to (UTF-8 bytes); a longer "
        "one is refused with -32602 (HTTP 413); 0: no limit",
        metavar="N",
    )
    max_subscription_bytes_per_principal: int = setting(
        1024 * 1024,
        help="what the subscribed URIs of all one principal's legacy sessions may add up to "
        "(UTF-8 bytes, counted in the legacy store, so across replicas with Redis); beyond it "
        "resources/subscribe is refused with -32602 (HTTP 413); 0: no limit",
        metavar="N",
    )
    max_tasks_per_principal: int = setting(
        100,
        help="unexpired tasks one principal may keep, counted in the task store across "
        "replicas; a task call beyond it gets HTTP 429; 0: no limit",
        metavar="N",
    )
    requests_per_s_per_principal: float = setting(
        100.0,
        help="requests per second one principal may send to this replica (a token bucket "
        "with a burst of twice that); more get HTTP 429 with Retry-After; 0: no limit",
        flag="--rate-per-principal",
        metavar="PER_S",
    )

    max_client_info_bytes: int = setting(
        8 * 1024,
        help="largest clientInfo a legacy session keeps (as JSON); a larger initialize is "
        "refused with -32602",
        metavar="N",
    )
    max_client_capabilities_bytes: int = setting(
        16 * 1024,
        help="largest client capabilities a legacy session or a task keeps (as JSON); larger "
        "is refused with -32602",
        metavar="N",
    )
    max_task_arguments_bytes: int = setting(
        64 * 1024,
        help="largest arguments a task keeps (as JSON), and the most its stored answers may "
        "add up to; a task call or an answer beyond it is refused with -32602",
        metavar="N",
    )
    max_task_result_bytes: int = setting(
        256 * 1024,
        help="largest result a task keeps (as JSON); a task whose tool returns more fails, "
        "saying so",
        metavar="N",
    )
    max_task_store_bytes: int = setting(
        256 * 1024 * 1024,
        help="most the in-process task store keeps (its tasks as JSON); a full store refuses "
        "new tasks and larger writes as full (a Redis store is bounded by its maxmemory)",
        metavar="N",
    )

    max_legacy_store_bytes: int = setting(
        256 * 1024 * 1024,
        help="most the in-process legacy store keeps (its sessions as JSON and their "
        "subscribed URIs, with what their objects take: 1 KiB a session, 64 bytes a URI); a "
        "full store refuses new sessions and subscriptions as full, HTTP 507 (a Redis store "
        "is bounded by its maxmemory)",
        metavar="N",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        counts = (
            self.requests_per_s_per_principal,
            self.max_held_calls_per_principal,
            self.max_sessions_per_principal,
            self.max_tasks_per_principal,
            self.max_task_result_waits_per_principal,
            self.max_cpu_calls_per_principal,
            self.max_task_result_waits_per_replica,
            self.max_cpu_calls_per_replica,
            self.max_held_calls_per_replica,
            self.max_subscriptions_per_session,
            self.max_subscription_uri_bytes,
            self.max_subscription_bytes_per_principal,
        )
        if min(counts) < 0:
            raise ConfigError("per-principal limits must be >= 0 (0: no limit)")
        sizes = (
            self.max_client_info_bytes,
            self.max_client_capabilities_bytes,
            self.max_task_arguments_bytes,
            self.max_task_result_bytes,
            self.max_task_store_bytes,
            self.max_legacy_store_bytes,
        )
        if min(sizes) <= 0:
            raise ConfigError("stored-size limits must be positive")

"""Server configuration: one dataclass whose fields carry their help, defaults and flags.

Every replica of a cluster must share `state_keys` (so any replica opens any other's
requestState) and `jwt_secret` (so any replica authenticates any client's token); both
come from the environment (`server.keys`), and belong with who may call (`server.access`).
"""

from __future__ import annotations

from dataclasses import dataclass

from server.caps import CapsConfig
from server.flags import setting
from server.keys import ConfigError, StateKey

__all__ = ["ConfigError", "ServerConfig", "StateKey"]


@dataclass(frozen=True)
class ServerConfig(CapsConfig):
    """How one replica of the lab's MCP server behaves.

    Defaults suit a laptop demo; the load test sets replica ids, keys and tool versions. Each
    setting is stated once, here, in `CapsConfig` (what a caller may take) or in
    `AccessConfig` (who may call): `python -m server` makes its flags from these fields.
    """

    replica_id: str = setting(
        "replica-1",
        help="name of this replica, shown in /healthz, metrics and the crunch tool's trail "
        "(python -m server's default: replica-PORT)",
    )
    tool_version: int = setting(
        1,
        help="version of the demo tools: 1 asks google_login in link_accounts, 2 asks "
        "microsoft_login instead (the rolling-upgrade example)",
        choices=(1, 2),
    )
    conformance: bool = setting(
        False,
        help="add the suite's fixtures: also serve the tools, prompts and resources the "
        "official conformance suite expects",
    )
    state_ttl_s: float = setting(
        600.0,
        help="how long a sealed requestState stays valid; a later retry is asked again",
        metavar="S",
    )
    max_body_bytes: int = setting(
        1024 * 1024, help="largest request body accepted; larger bodies get HTTP 413", metavar="N"
    )
    max_request_state_bytes: int = setting(
        64 * 1024,
        help="largest requestState accepted on a retry (a sealed token, base64 text)",
        metavar="N",
    )
    max_rounds: int = setting(
        16, help="most input rounds one logical request may take", metavar="N"
    )
    shed_in_flight_threshold: int = setting(
        0,
        help="in-flight requests above which a checkpointing tool offloads its progress "
        "(MRTR load shedding); 0 disables shedding by load",
        flag="--shed-in-flight",
        metavar="N",
    )
    shed_every_units: int = setting(
        0,
        help="offload crunch every N units regardless of load (for tests and demos); 0: off",
        metavar="N",
    )
    task_store: str = setting(
        "memory",
        help="where tasks (persistent tools) live; share one Redis between replicas (with "
        "memory and several replicas behind a balancer, most task requests find nothing)",
        metavar="memory|redis://HOST:PORT/DB",
    )
    task_store_timeout_s: float = setting(
        1.0,
        help="bound on every call to the task store, so an outage is a JSON-RPC error, not a hang",
        metavar="S",
    )
    task_store_volatile: bool = setting(
        False,
        help="accept a Redis task store without appendonly or with eviction (loses tasks); "
        "by default the replica refuses to start on one",
    )
    task_default_ttl_ms: int = setting(
        3_600_000, help="how long a task is kept when the client names no ttl", metavar="MS"
    )
    task_max_ttl_ms: int = setting(
        86_400_000, help="the longest ttl a client may ask for", metavar="MS"
    )
    task_poll_interval_ms: int = setting(
        250, help="how often clients should poll tasks/get (the task's pollInterval)", metavar="MS"
    )
    task_sweep_interval_s: float = setting(
        5.0,
        help="how often expired tasks are swept from the in-process store (Redis expires its own)",
        metavar="S",
    )
    task_result_wait_s: float = setting(
        30.0,
        help="how long the seed's tasks/result waits on a working task before answering "
        '"still working" (the v1 method blocks; this bounds it)',
        metavar="S",
    )
    task_lease_s: float = setting(
        10.0,
        help="how long a running task's claim lasts without renewal (renewed every third of "
        "it); after it another replica takes over from the last checkpoint",
        metavar="S",
    )
    task_list_page_size: int = setting(
        50, help="most tasks in one tasks/list page; nextCursor leads to the rest", metavar="N"
    )
    list_ttl_ms: int = setting(
        60_000, help="cache hint for list results (tools/list, prompts/list, ...)", metavar="MS"
    )
    legacy_store: str = setting(
        "memory",
        help="where 2025-11-25 sessions and pending answers live: memory (this process only, "
        "so answers must reach the replica holding the stream: a sticky load balancer) or a "
        "Redis shared by every replica",
        metavar="memory|redis://HOST:PORT/DB",
    )
    # Five minutes is an assumption: about as long as a person takes to fill in a form.
    answer_timeout_s: float = setting(
        300.0,
        help="how long a held legacy call waits for each answer before it ends with an error",
        metavar="S",
        aliases=("--legacy-answer-timeout-s",),
    )
    # Well under the 60 s idle timeout of common load balancers (AWS ALB default).
    legacy_keepalive_interval_s: float = setting(
        15.0,
        help="interval between SSE keep-alive comments on a held stream",
        flag="--legacy-keepalive-s",
        metavar="S",
    )
    legacy_session_ttl_s: float = setting(
        3600.0, help="how long an idle legacy session lives; each request renews it", metavar="S"
    )
    legacy_store_timeout_s: float = setting(
        2.0,
        help="bound on every call to the shared legacy store, so a Redis outage is an error, "
        "never a hang",
        metavar="S",
    )
    shutdown_timeout_s: float = setting(
        10.0,
        help="after SIGTERM, how long running requests may take before they are cut off "
        "(held legacy calls end at once with an error)",
        metavar="S",
    )
    max_connections: int = setting(
        2048,
        help="connections (and requests) served at once; more get HTTP 503 at once, so idle "
        "sockets cannot starve everyone else (held legacy streams count too)",
        metavar="N",
    )
    idle_timeout_s: float = setting(
        5.0, help="how long an idle keep-alive connection stays open", metavar="S"
    )
    # The default matches the load test's HAProxy `timeout http-request`.
    header_timeout_s: float = setting(
        10.0,
        help="how long a connection may take to send its request headers (from the moment it "
        "opens, or from the first byte of a later request on it) before it is closed",
        metavar="S",
    )
    # Node's and h11's default; HAProxy's own buffer (16 KiB) refuses larger heads anyway.
    max_header_bytes: int = setting(
        16 * 1024,
        help="largest request head (its header fields) accepted, counted as it arrives; a "
        "larger one gets HTTP 431 and the connection closes",
        metavar="N",
    )
    # Apache's LimitRequestFields and HAProxy's tune.http.maxhdr.
    max_header_count: int = setting(
        100, help="most header fields one request may carry; more get HTTP 431", metavar="N"
    )
    # The same 10 s as HAProxy's `timeout http-request`, which also counts from the first byte.
    body_timeout_s: float = setting(
        10.0,
        help="how long a whole request (headers and body) may take from its first byte (or "
        "the connection's opening, for its first request); a "
        "body still arriving then goes on only while it has averaged "
        "--body-min-rate-bytes-per-s since its head (bytes sent with the head count), and "
        "never longer than its length at that rate past this; a later body gets HTTP 408 and "
        "the connection closes",
        metavar="S",
    )
    # 1 MiB (--max-body-bytes) in 4 s: a body that comes at all comes far faster, and a
    # burst then silence, or a drip, earns a few seconds at most.
    body_min_rate_bytes_per_s: int = setting(
        256 * 1024,
        help="the average rate a body must keep, from its head on, to go on past "
        "--body-timeout-s (see there)",
        metavar="N",
    )
    # Two processes for a two-core laptop; `server.core.cpu_pool` says why processes.
    cpu_workers: int = setting(
        2,
        help="worker processes that run CPU-bound tool work (quote's cpu_ms, crunch's units) "
        "off the event loop, at a lower CPU priority than the replica",
        metavar="N",
    )
    # About what a hand-off to a worker costs: more on the loop, at a caller's full rate,
    # is time every other request on the replica waits (10 ms quotes at 65/s put /healthz
    # at 389 ms).
    cpu_inline_max_ms: float = setting(
        0.25,
        help="tool work estimated at no more CPU than this runs on the event loop itself "
        "(cheaper than a hand-off); more runs in the worker processes",
        metavar="MS",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tool_version not in (1, 2):
            raise ConfigError(f"tool_version must be 1 or 2, not {self.tool_version}")
        for name in ("state_ttl_s", "max_body_bytes", "max_request_state_bytes", "max_rounds"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive")
        if self.shed_in_flight_threshold < 0 or self.shed_every_units < 0:
            raise ConfigError("shedding thresholds must be >= 0")
        for name in ("task_store", "legacy_store"):
            spec = getattr(self, name)
            if spec != "memory" and not spec.startswith(("redis://", "rediss://", "unix://")):
                raise ConfigError(f"{name} must be 'memory' or a redis:// URL, not {spec!r}")
        for name in (
            "task_store_timeout_s",
            "task_default_ttl_ms",
            "task_max_ttl_ms",
            "task_poll_interval_ms",
            "task_sweep_interval_s",
            "task_result_wait_s",
            "task_lease_s",
            "task_list_page_size",
            "answer_timeout_s",
            "legacy_keepalive_interval_s",
            "legacy_session_ttl_s",
            "legacy_store_timeout_s",
            "shutdown_timeout_s",
            "max_connections",
            "idle_timeout_s",
            "header_timeout_s",
            "max_header_bytes",
            "max_header_count",
            "body_timeout_s",
            "body_min_rate_bytes_per_s",
            "cpu_workers",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive")
        if self.cpu_inline_max_ms < 0:
            raise ConfigError("cpu_inline_max_ms must be >= 0 (0: all CPU work off the loop)")

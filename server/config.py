"""Server configuration: one dataclass, documented defaults, read from the CLI and environment.

Every replica of a cluster must share `state_keys` (so any replica opens any other's
requestState) and `jwt_secret` (so any replica authenticates any client's token).
"""

from __future__ import annotations

import base64
import os
import warnings
from dataclasses import dataclass, field

# A well-known development key and secret. They make a laptop demo work out of the box and
# are announced with a warning: anyone can forge state or tokens with them.
DEV_STATE_KEY_ID = "dev"
DEV_STATE_KEY = base64.b64encode(b"mrtr-lab-development-key-32bytes").decode()
DEV_JWT_SECRET = "mrtr-lab-development-secret-do-not-deploy"


class ConfigError(ValueError):
    """A setting that cannot work, with a message that says which and why."""


@dataclass(frozen=True)
class StateKey:
    """One AES-256-GCM key for sealing requestState, named by a key id carried in every token."""

    key_id: str
    key_bytes: bytes


def parse_state_keys(spec: str) -> tuple[StateKey, ...]:
    """Parse `kid:base64key[,kid:base64key...]`; the first key seals, all keys open."""
    keys = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        key_id, sep, encoded = item.partition(":")
        if not sep or not key_id:
            raise ConfigError(f"state key {item!r} is not of the form kid:base64key")
        try:
            key_bytes = base64.b64decode(encoded, validate=True)
        except ValueError as exc:
            raise ConfigError(f"state key {key_id!r} is not valid base64") from exc
        if len(key_bytes) != 32:
            raise ConfigError(f"state key {key_id!r} has {len(key_bytes)} bytes; AES-256 needs 32")
        keys.append(StateKey(key_id, key_bytes))
    if not keys:
        raise ConfigError("no state keys given")
    if len({k.key_id for k in keys}) != len(keys):
        raise ConfigError("state key ids must be unique")
    return tuple(keys)


def _keys_from_environment() -> tuple[StateKey, ...]:
    spec = os.environ.get("MRTR_STATE_KEYS", "")
    if spec:
        return parse_state_keys(spec)
    warnings.warn(
        "MRTR_STATE_KEYS is unset: sealing requestState with the public development key",
        stacklevel=3,
    )
    return (StateKey(DEV_STATE_KEY_ID, base64.b64decode(DEV_STATE_KEY)),)


def _jwt_secret_from_environment() -> str:
    secret = os.environ.get("MRTR_JWT_SECRET", "")
    if secret:
        return secret
    warnings.warn(
        "MRTR_JWT_SECRET is unset: accepting tokens signed with the public development secret",
        stacklevel=3,
    )
    return DEV_JWT_SECRET


@dataclass(frozen=True)
class ServerConfig:
    """How one replica of the lab's MCP server behaves.

    Defaults suit a laptop demo; the load test sets replica ids, keys and tool versions.
    """

    #: Name of this replica, shown in /healthz, metrics and the `crunch` tool's trail.
    replica_id: str = "replica-1"
    #: Version of the demo tools: 1 asks `google_login` in `link_accounts`, 2 asks
    #: `microsoft_login` instead (the seed's rolling-upgrade example).
    tool_version: int = 1
    #: Also serve the tools, prompts and resources the official conformance suite expects.
    conformance: bool = False
    #: AES-256-GCM keys for requestState; the first seals, all open (key rotation).
    state_keys: tuple[StateKey, ...] = field(default_factory=_keys_from_environment)
    #: HS256 secret for bearer tokens; `sub` is the principal.
    jwt_secret: str = field(default_factory=_jwt_secret_from_environment)
    #: How long a sealed requestState stays valid (the spec asks for a short expiry).
    state_ttl_s: float = 600.0
    #: Largest request body accepted; larger bodies get HTTP 413.
    max_body_bytes: int = 1024 * 1024
    #: Largest requestState accepted on a retry (a sealed token, base64 text).
    max_request_state_bytes: int = 64 * 1024
    #: Most input rounds one logical request may take before the server gives up.
    max_rounds: int = 16
    #: In-flight requests above which a checkpointing tool offloads its progress (MRTR
    #: load shedding). 0 disables shedding by load.
    shed_in_flight_threshold: int = 0
    #: Offload `crunch` every N units regardless of load (a knob for tests and demos); 0 = off.
    shed_every_units: int = 0
    #: Where tasks (persistent tools) live: `memory` (this replica only; with several
    #: replicas behind a balancer, most task requests then find nothing) or a Redis URL such
    #: as `redis://127.0.0.1:6379/0`, shared by every replica.
    task_store: str = "memory"
    #: Bound on every call to the task store, so an outage is a JSON-RPC error, not a hang.
    task_store_timeout_s: float = 1.0
    #: Serve a Redis task store that could lose acknowledged tasks (no append-only file, or
    #: an eviction policy). By default the replica refuses to start on one.
    task_store_volatile: bool = False
    #: How long a task is kept when the client names no `ttl`: one hour.
    task_default_ttl_ms: int = 3_600_000
    #: The longest `ttl` a client may ask for: one day.
    task_max_ttl_ms: int = 86_400_000
    #: How often a client should poll `tasks/get` (the task's `pollInterval`).
    task_poll_interval_ms: int = 250
    #: How often expired tasks are swept from the in-process store (Redis expires its own).
    task_sweep_interval_s: float = 5.0
    #: How long the seed's `tasks/result` waits on a working task before answering "still
    #: working" (the v1 method blocks; this bounds it).
    task_result_wait_s: float = 30.0
    #: How long a replica's claim on a running task holds without renewal (renewed every
    #: third of it); when it lapses (the replica died), the next replica to read the task
    #: runs it again from its last checkpoint.
    task_lease_s: float = 10.0
    #: Most tasks one `tasks/list` page holds; `nextCursor` leads to the rest.
    task_list_page_size: int = 50
    #: Cache hint for list results (tools/list, prompts/list, ...), milliseconds.
    list_ttl_ms: int = 60_000
    #: Bound to loopback: Host must name this machine (DNS rebinding), and pages on this
    #: machine may call (their Origin is allowed). Set from the bind address.
    loopback_only: bool = True
    #: Origins (`scheme://host[:port]`) of pages allowed to call, besides this machine's on a
    #: loopback bind. Any other Origin is refused, and `Origin: null` always is.
    allowed_origins: tuple[str, ...] = ()
    #: Refuse callers without a bearer token (HTTP 401) instead of serving them anonymously.
    require_auth: bool = False
    #: Accept bearer tokens without an `exp` claim (by default a token must expire).
    jwt_allow_no_exp: bool = False
    #: Serve with the public development key or secret on a non-loopback bind (by default the
    #: server refuses to start: anyone could forge state and tokens with them).
    allow_development_keys: bool = False
    #: Where legacy (2025-11-25) sessions and pending answers live: `memory` (this process
    #: only, so answers must reach the replica holding the stream: a sticky load balancer) or
    #: a Redis URL such as `redis://127.0.0.1:6379/0` (shared by every replica).
    legacy_store: str = "memory"
    #: How long a legacy call held on its SSE stream waits for each answer before it ends with
    #: an error. An assumption: five minutes for a person to fill in a form.
    legacy_answer_timeout_s: float = 300.0
    #: Interval between SSE keep-alive comments on a held stream; well under the 60 s idle
    #: timeout of common load balancers (AWS ALB default).
    legacy_keepalive_interval_s: float = 15.0
    #: How long an idle legacy session lives; each request renews it.
    legacy_session_ttl_s: float = 3600.0
    #: Bound on every call to the shared store, so a Redis outage is an error, never a hang.
    legacy_store_timeout_s: float = 2.0
    #: After SIGTERM, how long requests still running may take before they are cut off
    #: (held legacy calls end at once with an error; this bounds the rest).
    shutdown_timeout_s: float = 10.0
    #: Connections (and requests) served at once; beyond it a request gets HTTP 503 at once,
    #: so idle sockets cannot starve everyone else. Held legacy streams count too.
    max_connections: int = 2048
    #: How long an idle keep-alive connection stays open between requests.
    idle_timeout_s: float = 5.0
    #: How long a connection may take to send a request's headers (from the moment it
    #: opens, or from the first byte of a later request on it) before it is closed; the
    #: default matches the load test's HAProxy `timeout http-request`.
    header_timeout_s: float = 10.0
    #: Legacy calls one principal may hold open on this replica at once (each holds tens
    #: of kilobytes and a connection while nobody answers); more get HTTP 429. 0 turns the
    #: limit off, the default: every anonymous caller is one principal, and the load test's
    #: swarm is anonymous.
    max_held_calls_per_principal: int = 0
    #: Legacy sessions one principal may have open at once (each keeps its client's
    #: capabilities for up to `legacy_session_ttl_s`); `initialize` beyond it gets HTTP
    #: 429. Counted in the legacy store, so with Redis the cap holds across replicas. 0
    #: turns it off, the default, for the same reason as the held-call limit.
    max_sessions_per_principal: int = 0
    #: Tasks one principal may keep in the task store at once (each, with its arguments
    #: and answers, stays until its ttl expires); a task call beyond it gets HTTP 429.
    #: Counted in the store, across replicas. 0 turns it off, the default.
    max_tasks_per_principal: int = 0
    #: Requests per second one principal may send to this replica (a token bucket with a
    #: burst of twice that); more get HTTP 429 with Retry-After. 0 turns the limit off.
    requests_per_s_per_principal: float = 0.0

    def __post_init__(self) -> None:
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
            "legacy_answer_timeout_s",
            "legacy_keepalive_interval_s",
            "legacy_session_ttl_s",
            "legacy_store_timeout_s",
            "shutdown_timeout_s",
            "max_connections",
            "idle_timeout_s",
            "header_timeout_s",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive")
        if not self.state_keys:
            raise ConfigError("at least one state key is needed")
        limits = (
            self.requests_per_s_per_principal,
            self.max_held_calls_per_principal,
            self.max_sessions_per_principal,
            self.max_tasks_per_principal,
        )
        if min(limits) < 0:
            raise ConfigError("per-principal limits must be >= 0 (0: no limit)")
        public = self.public_development_settings()
        if public and not self.loopback_only and not self.allow_development_keys:
            raise ConfigError(
                f"refusing to serve beyond loopback with the public development "
                f"{' and '.join(public)}: set them (or pass --allow-development-keys)"
            )

    def public_development_settings(self) -> list[str]:
        """Which settings still hold the public development values, by environment name."""
        development_key = base64.b64decode(DEV_STATE_KEY)
        public = []
        if any(key.key_bytes == development_key for key in self.state_keys):
            public.append("MRTR_STATE_KEYS")
        if self.jwt_secret == DEV_JWT_SECRET:
            public.append("MRTR_JWT_SECRET")
        return public

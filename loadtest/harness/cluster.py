"""A cluster on one machine: N replicas behind HAProxy, and Redis when the architecture needs it.

    mrtr       round-robin LB, stateless replicas, no store
    sticky     cookie-sticky LB, legacy SSE elicitation, answers kept in each replica's memory
    sse-store  round-robin LB, legacy SSE elicitation, answers routed through Redis

Task tools in the mix (`echo`, `provision_vm`) add a task store every replica shares: the
same Redis, then run with an append-only file so that a restart loses no task it had
acknowledged. Two replicas or more share one task store whatever the mix: what must happen
once (a confirmed `provision_vm` round creates one machine) is recorded there, and with a
store per replica each replica would let one copy of the round through.

Everything listens on 127.0.0.1 on ports chosen free, and everything started is stopped by
pid when the cluster goes down, also after an error (`with Cluster(...) as cluster:`).

State keys are prepared for rotation from the start: replicas seal with the current key
and already open with the next one, so a rolling upgrade can switch sealing to the next
key without any replica ever meeting a key it does not know.

The cluster's token secret is its own too, and its simulated users each act as a
principal of their own (`user_headers`): a replica's caps are per principal, and every
caller without a token is the one anonymous principal.
"""

from __future__ import annotations

import base64
import math
import os
import secrets
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.harness.haproxy import (
    CONNECTIONS_PER_SOURCE,
    Backend,
    HAProxy,
    RuntimeApi,
    render_config,
)
from loadtest.harness.redis_server import RedisServer
from server.config import ServerConfig
from server.flags import to_argv
from server.harness.principals import user_headers
from server.harness.process import ServerProcess, free_port
from server.keys import parse_state_keys
from server.tools.demo import demo_catalog

#: Where a run hands its simulated users in other processes (Locust's) the cluster's
#: token secret, so that each mints a token of its own.
USERS_SECRET_ENV = "LOADTEST_JWT_SECRET"
#: With `pin_cores`: the CPU of the replicas and HAProxy, and the one of the users (Locust).
SERVER_CPUS, USERS_CPUS = "0", "1"


def task_tools(tool_mix: dict[str, float]) -> list[str]:
    """The tools of the mix that run as tasks (the demo catalog's `taskSupport`): with any,
    the cluster adds the task store every replica shares."""
    tools = demo_catalog().tools
    return [name for name in tool_mix if name in tools and tools[name].task_support != "forbidden"]


def _key(key_id: str) -> str:
    return f"{key_id}:{base64.b64encode(secrets.token_bytes(32)).decode()}"


@dataclass
class KeyRing:
    """The cluster's requestState keys: `current` seals; `next` is already trusted."""

    current: str = field(default_factory=lambda: _key("k1"))
    next: str = field(default_factory=lambda: _key("k2"))

    def before_rotation(self) -> str:
        return f"{self.current},{self.next}"

    def after_rotation(self) -> str:
        return f"{self.next},{self.current}"


class Cluster:
    """Replicas, load balancer and store of one architecture, started and stopped together."""

    def __init__(
        self,
        config: LoadTestConfig,
        *,
        lb_port: int | None = None,
        workdir: Path | None = None,
        server_settings: Mapping[str, object] | None = None,
    ) -> None:
        if not HAProxy.available():
            raise LoadTestError("haproxy is not installed (make setup installs it)")
        #: Tools of the mix that run as tasks: they need the shared, persistent task store.
        self.task_tools = task_tools(config.tool_mix)
        #: Whether the replicas share one task store: for the mix's task tools, and for
        #: single use (the store records each side-effecting round) when there are several.
        self.shared_task_store = bool(self.task_tools) or config.replicas > 1
        self.needs_store = config.arch == "sse-store" or self.shared_task_store
        if self.needs_store and not RedisServer.available():
            raise LoadTestError(
                "redis-server is not installed (make setup installs it): replicas share it "
                "for sse-store's answers, task tools' tasks and, with more than one replica, "
                "single use of tools with side effects"
            )
        if config.scenario == "store-outage" and not (
            config.arch == "sse-store" or self.task_tools
        ):
            raise LoadTestError("store-outage needs a store: add a task tool or use sse-store")
        self.config = config
        self.lb_port = lb_port or free_port()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="mrtr-cluster-")
            workdir = Path(self._tmp.name)
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.keys = KeyRing()
        self.jwt_secret = secrets.token_urlsafe(32)
        #: Settings of every replica (`ServerConfig` fields) on top of what the run sets.
        self.server_settings = dict(server_settings or {})
        self.redis: RedisServer | None = None
        self.lb: HAProxy | None = None
        self.replicas: dict[str, ServerProcess] = {}
        self.versions: dict[str, int] = {}
        self.events: list[dict[str, Any]] = []
        self.api = RuntimeApi(self.workdir / "haproxy.sock")
        #: Where replicas and HAProxy run when the config pins cores (Locust gets CPU 1).
        self.server_cpus = SERVER_CPUS if config.pin_cores else None

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The MCP endpoint behind the load balancer."""
        return f"http://127.0.0.1:{self.lb_port}/mcp"

    @property
    def idle_timeout_s(self) -> float:
        """HAProxy's client and server timeout: short in the idle-timeout scenario."""
        return self.config.lb_idle_timeout_s if self.config.scenario == "idle-timeout" else 60.0

    @property
    def connections_per_source(self) -> int:
        """The edge's bound on one source address's open connections: the run's own users
        all call from 127.0.0.1, so it holds them with room (four connections a user; an
        open loop's arrivals over its stop timeout, which no call it counts outlives), and
        never less than HAProxy's default bound."""
        users = 4 * self.config.locust_users
        arrivals = math.ceil(self.config.rate_per_s * self.config.stop_timeout_s)
        return max(CONNECTIONS_PER_SOURCE, users, arrivals)

    @property
    def names(self) -> list[str]:
        return list(self.replicas)

    def up(self) -> Cluster:
        """Start the store, the replicas, then the load balancer."""
        try:
            if self.needs_store:
                fsync = self.config.task_store_fsync
                if self.task_tools and fsync != "off":
                    self.redis = RedisServer(data_dir=self.workdir / "redis", fsync=fsync)
                else:
                    self.redis = RedisServer()
                self.redis.start()
                self.log("redis up", port=self.redis.port, persistent=self.redis.persistent)
            for i in range(1, self.config.replicas + 1):
                name = f"r{i}"
                self.replicas[name] = self._replica(
                    name, free_port(), 1, self.keys.before_rotation()
                )
                self.replicas[name].start()
                self.versions[name] = 1
            backends = [Backend(n, p.port) for n, p in self.replicas.items()]
            text = render_config(
                lb_port=self.lb_port,
                backends=backends,
                sticky=self.config.arch == "sticky",
                admin_socket=self.api.socket_path,
                health_check_interval_ms=self.config.health_check_interval_ms,
                stream_timeout_s=self.idle_timeout_s,
                health_check_timeout_ms=self.config.health_check_timeout_ms,
                # The replicas' own limit refuses first: HAProxy queues only beyond it.
                max_connections_per_server=max(512, self.config.max_connections or 0),
                max_connections_per_source=self.connections_per_source,
            )
            self.lb = HAProxy(text, self.workdir).start(self.api.socket_path, self.server_cpus)
            self.wait_all_up()
            self.log("cluster up", replicas=self.names, lb_port=self.lb_port)
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        """Stop everything this cluster started, by pid."""
        if self.lb is not None:
            self.lb.stop()
        for replica in self.replicas.values():
            replica.stop()
        if self.redis is not None:
            self.redis.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Cluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    def pids(self) -> list[int]:
        """Every live process of the cluster (for checking nothing is left behind)."""
        found = [self.lb.pid if self.lb else None, self.redis.pid if self.redis else None]
        found += [r.pid for r in self.replicas.values()]
        return [p for p in found if p is not None]

    def user_headers(self, principal: str | None = None) -> dict[str, str]:
        """The Authorization header of one simulated user: a principal of its own (a fresh
        one unless named), held to its own caps."""
        return user_headers(self.jwt_secret, principal)

    # -- replicas ----------------------------------------------------------------------

    def _replica(self, name: str, port: int, tool_version: int, keys: str) -> ServerProcess:
        config = self.replica_config(name, tool_version, keys)
        env = {**os.environ, "MRTR_STATE_KEYS": keys, "MRTR_JWT_SECRET": self.jwt_secret}
        return ServerProcess(
            port=port,
            replica_id=name,
            args=self.replica_argv(config),
            env=env,
            log_path=self.workdir / f"{name}.log",
            cpus=self.server_cpus,
        )

    def replica_config(self, name: str, tool_version: int, keys: str) -> ServerConfig:
        """How replica `name` behaves: the server's defaults, with what the run's
        configuration and the architecture set (its stores, the answer timeout, its limits)."""
        config = self.config
        settings: dict[str, Any] = {"answer_timeout_s": config.answer_timeout_s}
        for name_of_setting in ("max_connections", "cpu_workers", "cpu_inline_max_ms"):
            if getattr(config, name_of_setting) is not None:
                settings[name_of_setting] = getattr(config, name_of_setting)
        if config.arch == "sse-store":
            assert self.redis is not None
            settings["legacy_store"] = self.redis.url
        if self.shared_task_store:
            assert self.redis is not None
            settings["task_store"] = self.redis.url
            # Without the append-only file the store is volatile on purpose (fsync off).
            settings["task_store_volatile"] = not self.redis.persistent
            settings["task_lease_s"] = config.task_lease_s
        if config.scenario == "idle-timeout":
            # Keep-alive comments off: nothing crosses a held stream while the user thinks.
            settings["legacy_keepalive_interval_s"] = 3600.0
        if config.scenario == "overload" and config.arch == "mrtr":
            settings["shed_in_flight_threshold"] = config.shed_in_flight
        settings.update(self.server_settings)
        return ServerConfig(
            replica_id=name,
            tool_version=tool_version,
            state_keys=parse_state_keys(keys),
            jwt_secret=self.jwt_secret,
            **settings,
        )

    def replica_argv(self, config: ServerConfig) -> list[str]:
        """The flags of `python -m server` that make a replica of `config` (its id, port and
        address are the process's own; its keys and secret go by the environment)."""
        return to_argv(config, skip=("replica_id",))

    def replace(self, name: str, *, tool_version: int, rotated_keys: bool) -> None:
        """Stop a replica and start its successor on the same port (it must be drained first)."""
        old = self.replicas[name]
        old.stop(timeout_s=1.0)
        keys = self.keys.after_rotation() if rotated_keys else self.keys.before_rotation()
        new = self._replica(name, old.port, tool_version, keys)
        self.replicas[name] = new
        new.start()
        self.versions[name] = tool_version

    def kill(self, name: str) -> None:
        """Kill a replica at once (a crash): streams cut, memory lost."""
        self.replicas[name].kill()
        self.log("crash", replica=name)

    def restart(self, name: str) -> None:
        """Start a crashed replica again with its version and keys."""
        replica = self.replicas[name]
        fresh = self._replica(
            name, replica.port, self.versions[name], replica.env["MRTR_STATE_KEYS"]
        )
        self.replicas[name] = fresh
        fresh.start()
        self.log("restarted", replica=name)

    def store_outage(self, down_s: float) -> None:
        """Kill the store at once, keep it down for `down_s`, start it again on its data."""
        assert self.redis is not None
        self.redis.kill()
        self.log("store down", persistent=self.redis.persistent)
        time.sleep(down_s)
        self.redis.start()
        self.log("store up")

    def health(self, name: str) -> dict[str, Any]:
        """A replica's /healthz document, or {} if it does not answer."""
        try:
            return httpx.get(f"{self.replicas[name].base_url}/healthz", timeout=1.0).json()
        except (httpx.HTTPError, ValueError):
            return {}

    def wait_all_up(self, timeout_s: float = 15.0) -> None:
        """Wait until HAProxy's health checks see every replica UP."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            stats = self.api.server_stats()
            if stats and all(s["status"].startswith("UP") for s in stats.values()):
                return
            time.sleep(0.05)
        raise TimeoutError(f"replicas not all UP in HAProxy: {self.api.server_stats()}")

    def wait_up(self, name: str, timeout_s: float = 15.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.api.server_stats()[name]["status"].startswith("UP"):
                return
            time.sleep(0.05)
        raise TimeoutError(f"{name} not UP in HAProxy")

    def log(self, event: str, **details: Any) -> None:
        """Record what happened when (the summary's `faults`)."""
        self.events.append({"t": time.time(), "event": event, **details})

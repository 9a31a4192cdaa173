"""The lab's control of a running swarm: what each replica is doing, and faults on demand.

`ClusterControl` reads every replica of the swarm's own cluster (`/healthz`, `/metrics`,
HAProxy's view) and injects the faults of `loadtest.scenarios.run` when asked: a rolling
upgrade (`loadtest.harness.upgrade`), a crash, a restart, a store outage. One fault runs at a time,
in the background, and the cluster's event log is the timeline.

`TargetControl` is for a swarm driving an endpoint it did not start (`--target`): it shows
what the calls saw and refuses every fault, which then come from that endpoint's operator.

A replica's held calls are its legacy calls whose SSE stream is open while their user
thinks: `/healthz`'s `open_streams`, one per call. (Its `waiting_calls` are the same calls
again, those waiting for an answer now: adding the two counted most calls twice.) Its
requests in flight include the held calls, whose POST is still being answered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from loadtest.config import FAULTS
from loadtest.harness.cluster import Cluster
from loadtest.harness.upgrade import rolling_upgrade
from loadtest.labtab.series import Load
from loadtest.swarm.locust_stats import NO_REPLICA, REPLICA_COUNTS


class FaultRefused(Exception):
    """A fault that cannot run now or here; the message says why (HTTP 409)."""


def requests_served(base_url: str) -> int | None:
    """The replica's `mcp_requests` counter summed over methods and outcomes (its /metrics)."""
    try:
        text = httpx.get(f"{base_url}/metrics", timeout=1.0).text
    except httpx.HTTPError:
        return None
    for family in text_string_to_metric_families(text):
        if family.name == "mcp_requests":
            return int(sum(s.value for s in family.samples if s.name == "mcp_requests_total"))
    return 0


def swarm_requests() -> dict[str, int]:
    """HTTP requests the swarm's users had answered, per replica (`X-Served-By`), since the
    swarm started: the master's merge of every worker's counts (`loadtest.swarm.locust_stats`)."""
    table = REPLICA_COUNTS.by_replica()
    return {name: sum(kinds.values()) for name, kinds in table.items() if name != NO_REPLICA}


def held_calls(health: dict[str, Any]) -> int:
    """The calls a replica holds on an open SSE stream, from its /healthz document."""
    return int(health.get("open_streams", 0))


def load_of(healths: list[dict[str, Any]]) -> Load:
    """Held calls and requests in flight, summed over the replicas' /healthz documents."""
    return Load(
        held=sum(held_calls(h) for h in healths),
        in_flight=sum(int(h.get("in_flight", 0)) for h in healths),
    )


def shares(counts: dict[str, int | None]) -> dict[str, float]:
    """Each replica's share of the requests counted, in percent."""
    total = sum(c or 0 for c in counts.values())
    return {name: round(100 * (c or 0) / total, 1) if total else 0.0 for name, c in counts.items()}


def started_in_words(fault: str, detail: dict[str, Any]) -> str:
    """What a fault just started will do, in a sentence (the Lab tab shows it)."""
    if fault == "rolling-upgrade":
        return (
            f"rolling upgrade to tool version {detail['tool_version']}: each replica in turn "
            f"drained for up to {detail['drain_timeout_s']:g} s, stopped, and replaced with "
            "rotated keys"
        )
    if fault == "redis-outage":
        return f"Redis outage: Redis killed now, started again after {detail['down_s']:g} s"
    if fault == "crash":
        return f"{detail['replica']} crashed (SIGKILL); Restart it brings it back"
    return f"{detail['replica']} starting again"


class ClusterControl:
    """The lab's hand on its own cluster while a swarm runs against it."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.busy: str | None = None
        self._lock = threading.Lock()

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.cluster.events

    def replicas(self) -> list[dict[str, Any]]:
        """One row per replica: version, health, share of requests, in-flight and held calls."""
        cluster = self.cluster
        try:
            lb = cluster.api.server_stats()
        except OSError:
            lb = {}
        rows = []
        swarm = swarm_requests()
        share = shares({name: swarm.get(name, 0) for name in cluster.replicas})
        for name, process in cluster.replicas.items():
            running = process.process is not None and process.process.poll() is None
            health = cluster.health(name) if running else {}
            rows.append(
                {
                    "id": name,
                    "version": health.get("tool_version", cluster.versions.get(name)),
                    "health": health.get("status", "down"),
                    "balancer": lb.get(name, {}).get("status", "?"),
                    "requests": requests_served(process.base_url) if running else None,
                    "swarm_requests": swarm.get(name, 0),
                    "share_pct": share[name],
                    "in_flight": health.get("in_flight", 0),
                    "held": held_calls(health) if running else 0,
                    "port": process.port,
                }
            )
        return rows

    def load(self) -> Load:
        """Held calls and requests in flight over the replicas running now."""
        cluster = self.cluster
        running = [
            name
            for name, replica in cluster.replicas.items()
            if replica.process is not None and replica.process.poll() is None
        ]
        return load_of([cluster.health(name) for name in running])

    def inject(self, fault: str, replica: str | None = None) -> dict[str, Any]:
        """Start a fault in the background; what was started (with `said`, the same in
        words), or `FaultRefused`."""
        if fault not in FAULTS:
            raise FaultRefused(f"unknown fault {fault!r}; the lab knows {', '.join(FAULTS)}")
        with self._lock:
            if self.busy:
                raise FaultRefused(f"{self.busy} is still running; wait until it is done")
            action, detail = self._plan(fault, replica)
            self.busy = fault
        threading.Thread(target=self._run, args=(fault, action), daemon=True).start()
        return {"fault": fault, **detail, "said": started_in_words(fault, detail)}

    def _plan(self, fault: str, replica: str | None) -> tuple[Callable[[], Any], dict[str, Any]]:
        cluster = self.cluster
        config = cluster.config
        if fault == "rolling-upgrade":
            version = max(cluster.versions.values()) + 1
            return (
                lambda: rolling_upgrade(
                    cluster, drain_timeout_s=config.drain_timeout_s, tool_version=version
                ),
                {"tool_version": version, "drain_timeout_s": config.drain_timeout_s},
            )
        if fault == "redis-outage":
            if cluster.redis is None:
                raise FaultRefused("this cluster has no Redis (use --arch sse-store or task tools)")
            return (
                lambda: cluster.store_outage(config.restart_delay_s),
                {"down_s": config.restart_delay_s},
            )
        up = [n for n, p in cluster.replicas.items() if p.process is not None]
        down = [n for n in cluster.replicas if n not in up]
        if replica is not None and replica not in cluster.replicas:
            raise FaultRefused(f"no replica {replica!r}; the cluster has {', '.join(up + down)}")
        if fault == "crash":
            victim = replica or (up[0] if up else None)
            if victim is None or victim in down:
                raise FaultRefused(f"{victim or 'every replica'} is already down")
            return (lambda: cluster.kill(victim)), {"replica": victim}
        target = replica or (down[0] if down else None)
        if target is None:
            raise FaultRefused("no replica is down: crash one first")
        if target in up:
            raise FaultRefused(f"{target} is not down: crash it first")
        return (lambda: cluster.restart(target)), {"replica": target}

    def _run(self, fault: str, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as error:  # shown in the timeline; the swarm goes on
            self.cluster.log("fault failed", fault=fault, error=f"{type(error).__name__}: {error}")
        finally:
            self.busy = None


class TargetControl:
    """A swarm against an endpoint it did not start: observe only, no faults."""

    def __init__(self, url: str) -> None:
        self.base_url = url.removesuffix("/mcp")
        self.events: list[dict[str, Any]] = [{"t": time.time(), "event": "target", "url": url}]

    def replicas(self) -> list[dict[str, Any]]:
        """The replicas the calls were served by, and the one the endpoint's /healthz names."""
        served = swarm_requests()
        try:
            health = httpx.get(f"{self.base_url}/healthz", timeout=1.0).json()
        except (httpx.HTTPError, ValueError):
            health = {}
        named = health.get("replica_id")
        if named and named not in served:
            served[named] = 0
        rows = []
        for name, share in shares(dict(served)).items():
            own = named == name
            rows.append(
                {
                    "id": name,
                    "version": health.get("tool_version") if own else None,
                    "health": health.get("status", "?") if own else "?",
                    "balancer": "-",
                    "requests": None,
                    "swarm_requests": served[name],
                    "share_pct": share,
                    "in_flight": health.get("in_flight", 0) if own else None,
                    "held": held_calls(health) if own else None,
                }
            )
        return rows

    def load(self) -> Load | None:
        """The endpoint's own held calls and requests in flight (its /healthz), if it answers."""
        try:
            return load_of([httpx.get(f"{self.base_url}/healthz", timeout=1.0).json()])
        except (httpx.HTTPError, ValueError):
            return None

    def inject(self, fault: str, replica: str | None = None) -> dict[str, Any]:
        raise FaultRefused(
            "this swarm drives an existing endpoint (--target): faults come from its operator"
        )

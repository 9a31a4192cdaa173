"""Prometheus metrics of one replica: what it served, what it asked for, what it refused.

Each app has its own registry, so several servers in one process (tests, notebooks) keep
separate counts.

The counts every request makes (requests by outcome, InputRequiredResults, states sealed)
are tallied in a plain dict and added to their Prometheus counters when `/metrics` is
rendered: an increment of a Prometheus counter takes a lock and four calls, which the
request path paid three times per round. A replica serves on one event loop thread, so
the tally needs no lock; a scrape sees every count made before it.

The interpreter's garbage collections (`python_gc_collections_total` by generation) are
shown too, read from `gc.get_stats()` at each scrape: whether a replica under load
collects at all, and how often, with nothing added to the request path; and the
process's resident memory and CPU time (`process_resident_memory_bytes`, read from /proc
at each scrape), by which `python -m loadtest measure --target` weighs a held call.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "ServerMetrics"]


class ServerMetrics:
    """The counters and gauges `/metrics` exposes."""

    def __init__(self, replica_id: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        GCCollector(registry=self.registry)
        ProcessCollector(registry=self.registry)
        labels = {"replica": replica_id}
        self.requests = Counter(
            "mcp_requests",
            "JSON-RPC requests by method and outcome (complete, input_required, error)",
            ["method", "outcome"],
            registry=self.registry,
        )
        self.input_required = Counter(
            "mrtr_input_required_results",
            "InputRequiredResults sent, by kind (questions, or offload with state only)",
            ["kind"],
            registry=self.registry,
        )
        self.states_sealed = Counter(
            "mrtr_request_states_sealed", "requestStates sealed", registry=self.registry
        )
        self.state_failures = Counter(
            "mrtr_request_state_failures",
            "requestStates rejected, by reason (tampered, expired, wrong_principal, ...)",
            ["reason"],
            registry=self.registry,
        )
        self.state_restarts = Counter(
            "mrtr_request_state_restarts",
            "Requests whose requestState had expired or was sealed with a key no longer held, "
            "answered by asking again from the first question, by reason",
            ["reason"],
            registry=self.registry,
        )
        self.stored_refusals = Counter(
            "mcp_stored_refusals",
            "What a caller asked a replica to keep, refused at one of its caps, by store and "
            "cap (docs/hardening.md lists them)",
            ["store", "cap"],
            registry=self.registry,
        )
        self.totals_reached = Counter(
            "mcp_replica_totals_reached",
            "Calls refused (or, for tasks/result, answered without waiting) because this "
            "replica's total of that kind, all principals together, was reached",
            ["limit"],
            registry=self.registry,
        )
        for limit in ("task_result_waits", "held_calls", "cpu_calls"):
            self.totals_reached.labels(limit)  # shown from the start, at 0
        self.in_flight = Gauge(
            "mcp_in_flight_requests", "Requests being served now", registry=self.registry
        )
        self.info = Gauge(
            "mcp_replica_info",
            "Replica identity (value is always 1)",
            ["replica", "tool_version"],
            registry=self.registry,
        )
        self._labels = labels
        #: Hot-path counts not yet added to their counters, by (counter, label values).
        self._tally: defaultdict[tuple[Any, tuple[str, ...]], int] = defaultdict(int)
        #: The hot path's counts, as keys of `_tally`.
        self.asked_questions = (self.input_required, ("questions",))
        self.offloaded = (self.input_required, ("offload",))
        for _, kind in (self.asked_questions, self.offloaded):
            self.input_required.labels(*kind)  # shown from the start, at 0
        self.states_sealed_key = (self.states_sealed, ())

    def count(self, key: tuple[Any, tuple[str, ...]]) -> None:
        """Count one event of a hot-path counter (`asked_questions`, `offloaded`, ...)."""
        self._tally[key] += 1

    def count_request(self, method: str, outcome: str) -> None:
        """Count one request by method and outcome."""
        self._tally[(self.requests, (method, outcome))] += 1

    def flush(self) -> None:
        """Add the tallied hot-path counts to their Prometheus counters."""
        tally, self._tally = self._tally, defaultdict(int)
        for (counter, labels), n in tally.items():
            (counter.labels(*labels) if labels else counter).inc(n)

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        self.flush()
        return generate_latest(self.registry)

"""Prometheus metrics of one replica: what it served, what it asked for, what it refused.

Each app has its own registry, so several servers in one process (tests, notebooks) keep
separate counts.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "ServerMetrics"]


class ServerMetrics:
    """The counters and gauges `/metrics` exposes."""

    def __init__(self, replica_id: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
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
        self._request_children: dict[tuple[str, str], Any] = {}
        #: The two kinds of InputRequiredResult, resolved once (the hot path counts them).
        self.asked_questions = self.input_required.labels("questions")
        self.offloaded = self.input_required.labels("offload")

    def count_request(self, method: str, outcome: str) -> None:
        """Count one request by method and outcome (children cached: this is the hot path)."""
        child = self._request_children.get((method, outcome))
        if child is None:
            child = self._request_children[(method, outcome)] = self.requests.labels(
                method, outcome
            )
        child.inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)

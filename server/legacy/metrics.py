"""What `/metrics` shows about the legacy era: sessions, held streams, answers."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import Counter, Gauge

from server.core.metrics import ServerMetrics
from server.legacy.held import HeldCalls


class LegacyMetrics:
    """What `/metrics` shows about legacy sessions, streams and answers."""

    def __init__(
        self, metrics: ServerMetrics, held: HeldCalls, local_sessions: Callable[[], int]
    ) -> None:
        registry = metrics.registry
        self.sessions = Counter(
            "legacy_sessions",
            "Legacy sessions by event (created, deleted)",
            ["event"],
            registry=registry,
        )
        self.server_requests = Counter(
            "legacy_server_requests",
            "Requests sent to clients on held SSE streams, by method",
            ["method"],
            registry=registry,
        )
        self.answers = Counter(
            "legacy_answers",
            "Answers POSTed by clients, by outcome (local, relayed, unknown_session, "
            "unknown_request, store_error)",
            ["outcome"],
            registry=registry,
        )
        self.answer_timeouts = Counter(
            "legacy_answer_timeouts",
            "Held calls ended because the client did not answer in time",
            registry=registry,
        )
        self.store_errors = Counter(
            "legacy_store_errors",
            "Operations on the legacy store that failed or timed out, by operation",
            ["operation"],
            registry=registry,
        )
        gauges = {
            "legacy_open_sessions": ("Sessions that live only on this replica", local_sessions),
            "legacy_open_streams": ("SSE streams held open now", lambda: held.open_streams),
            "legacy_waiting_calls": ("Calls waiting for a client's answer", held.waiting_calls),
            "legacy_waiting_memory_bytes": (
                "Estimated bytes held by calls waiting for an answer",
                held.waiting_memory_bytes,
            ),
        }
        for name, (doc, read) in gauges.items():
            Gauge(name, doc, registry=registry).set_function(read)

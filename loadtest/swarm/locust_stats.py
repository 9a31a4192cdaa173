"""How the swarm's traffic reads in Locust's statistics: the row names, and who served what.

Two kinds of rows, never mixed:

- `CALL` rows, one per tool: a whole tool call as its user lived it (latency without think
  time; a failure unless it completed). Their size is 0: a call has no single body.
- `POST` rows, one per round kind: the HTTP requests the calls were made of, each with
  its real response size.

| round kind     | request                                                              |
|----------------|----------------------------------------------------------------------|
| `round 1`      | MRTR `tools/call`, first round (no `inputResponses`, no `requestState`) |
| `answer retry` | MRTR `tools/call` carrying the user's `inputResponses`               |
| `state retry`  | MRTR `tools/call` with `requestState` only (e.g. `crunch` shedding)  |
| `sse call`     | legacy `tools/call`, answered on an SSE stream held while users think |
| `answer post`  | legacy answer to a server request, POSTed on its own                 |
| `session`      | legacy `initialize` and `notifications/initialized`                  |
| `task poll`    | `tasks/get`                                                          |
| `task result`  | `tasks/result`                                                       |
| `task answer`  | `tasks/input_response` or `tasks/update`                             |

Locust's `Aggregated` row would add calls and their own requests together; here it
counts the `POST` rows only (so do its charts of requests per second and failures).

A round sent again after a cut keeps its kind. HAProxy names the replica that served each
response (`X-Served-By`); `ReplicaCounts` counts requests per replica and round kind
(`none` when no replica answered), across Locust workers through Locust's own worker
reports, and writes them where `LOADTEST_REPLICAS_FILE` says when Locust quits.

A Locust run as a subprocess keeps its HTML report with `--html PATH`; one run in this
process (a master, or a lone runner) waits for its workers' last reports
(`await_worker_reports`), writes the report with `write_html_report`, and takes its
counts from `per_replica(REPLICA_COUNTS.by_replica())`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

#: The request type of a whole tool call's row.
CALL = "CALL"
ROUND_1 = "round 1"
ANSWER_RETRY = "answer retry"
STATE_RETRY = "state retry"
SSE_CALL = "sse call"
ANSWER_POST = "answer post"
SESSION = "session"
TASK_POLL = "task poll"
TASK_RESULT = "task result"
TASK_ANSWER = "task answer"
ROUND_KINDS = (
    ROUND_1,
    ANSWER_RETRY,
    STATE_RETRY,
    SSE_CALL,
    ANSWER_POST,
    SESSION,
    TASK_POLL,
    TASK_RESULT,
    TASK_ANSWER,
)
#: The replica of a request no replica answered (connection cut, HAProxy's own error).
NO_REPLICA = "none"

_METHOD_KINDS = {
    "initialize": SESSION,
    "notifications/initialized": SESSION,
    "tasks/get": TASK_POLL,
    "tasks/result": TASK_RESULT,
    "tasks/input_response": TASK_ANSWER,
    "tasks/update": TASK_ANSWER,
}


def round_kind(body: dict[str, Any], *, streamed: bool = False) -> str:
    """The round kind of one request body; `streamed` for a legacy call's SSE POST.

    A method outside the table above is its own kind.
    """
    method = body.get("method")
    if method is None:
        return ANSWER_POST
    if method != "tools/call":
        return _METHOD_KINDS.get(method, method)
    if streamed:
        return SSE_CALL
    params = body.get("params") or {}
    if "inputResponses" in params:
        return ANSWER_RETRY
    if "requestState" in params:
        return STATE_RETRY
    return ROUND_1


class ReplicaCounts:
    """HTTP requests per replica and round kind, in one Locust process."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def add(self, served_by: str | None, kind: str, n: int = 1) -> None:
        with self._lock:
            self._counts[(served_by or NO_REPLICA, kind)] += n

    def by_replica(self) -> dict[str, dict[str, int]]:
        """`{replica: {round kind: requests}}` so far: what a web UI tab may show."""
        with self._lock:
            items = sorted(self._counts.items())
        table: dict[str, dict[str, int]] = {}
        for (replica, kind), n in items:
            table.setdefault(replica, {})[kind] = n
        return table

    def take(self) -> dict[str, dict[str, int]]:
        """The counts so far, and start again from zero (a worker's report to its master)."""
        table = self.by_replica()
        self.clear()
        return table

    def merge(self, table: dict[str, dict[str, int]]) -> None:
        """Add counts another process took (a worker's report, on the master)."""
        for replica, kinds in table.items():
            for kind, n in kinds.items():
                self.add(replica, kind, n)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


#: The counts of this process's users (or, on a master, of its workers).
REPLICA_COUNTS = ReplicaCounts()
#: Where the counts go when Locust quits (the master's, or a lone process's).
REPLICAS_FILE_ENV = "LOADTEST_REPLICAS_FILE"
#: The key of the counts in a worker's report to its master.
_REPORT_KEY = "mrtr_replica_counts"


def keep_calls_out_of_the_total(stats: Any) -> None:
    """Log `CALL` rows in Locust's `stats` (a `RequestStats`) without adding them to its
    `Aggregated` total, which then counts HTTP requests only.

    Locust has no setting for this; its runners log every request through these two
    methods of the one `stats` object, so they are replaced on that object. A worker's
    total (HTTP only) is what its master adds to its own.
    """
    from locust.stats import StatsError

    log_request, log_error = stats.log_request, stats.log_error

    def log_request_outside_calls(method: str, name: str, response_time: Any, length: int) -> None:
        if method != CALL:
            log_request(method, name, response_time, length)
        else:
            stats.get(name, method).log(response_time, length)

    def log_error_outside_calls(method: str, name: str, error: Any) -> None:
        if method != CALL:
            log_error(method, name, error)
            return
        stats.get(name, method).log_error(error)
        key = StatsError.create_key(method, name, error)
        stats.errors.setdefault(key, StatsError(method, name, error)).occurred()

    stats.log_request = log_request_outside_calls
    stats.log_error = log_error_outside_calls


def install(events: Any, counts: ReplicaCounts = REPLICA_COUNTS) -> None:
    """Keep calls out of Locust's total; carry `counts` from workers to their master,
    clear them with Locust's stats, and write them when Locust quits (a worker writes
    nothing: its master has them)."""

    def on_init(environment: Any, **kwargs: Any) -> None:
        keep_calls_out_of_the_total(environment.stats)

    def on_report_to_master(client_id: str, data: dict[str, Any], **kwargs: Any) -> None:
        data[_REPORT_KEY] = counts.take()

    def on_worker_report(client_id: str, data: dict[str, Any], **kwargs: Any) -> None:
        counts.merge(data.get(_REPORT_KEY) or {})

    def on_reset_stats(**kwargs: Any) -> None:
        counts.clear()  # Locust clears its stats when a test starts and on a reset

    def on_quitting(environment: Any, **kwargs: Any) -> None:
        from locust.runners import WorkerRunner

        path = os.environ.get(REPLICAS_FILE_ENV)
        if path and not isinstance(environment.runner, WorkerRunner):
            Path(path).write_text(json.dumps(counts.by_replica()))

    events.init.add_listener(on_init)
    events.report_to_master.add_listener(on_report_to_master)
    events.worker_report.add_listener(on_worker_report)
    events.reset_stats.add_listener(on_reset_stats)
    events.test_start.add_listener(on_reset_stats)
    events.quitting.add_listener(on_quitting)


def per_replica(table: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    """The summary's `per_replica`: each replica's HTTP requests, in all and by round kind."""
    return {
        replica: {"requests": sum(kinds.values()), "kinds": dict(sorted(kinds.items()))}
        for replica, kinds in sorted(table.items())
    }


def await_worker_reports(runner: Any, worker_ids: list[str], timeout_s: float = 10.0) -> None:
    """Until each of `worker_ids` has reported once more to a stopped master `runner` (a
    lone runner has nothing to wait for).

    A worker sends its statistics and replica counts every few seconds, not when it
    stops; the first report its master receives after the worker said it stopped holds
    all of them. Without this wait the last seconds of a run miss from the master's table.
    (A stopped worker has left `runner.clients`, hence the ids.)
    """
    import gevent
    from locust.runners import MasterRunner

    if not isinstance(runner, MasterRunner):
        return
    waiting = set(worker_ids)

    def on_worker_report(client_id: str, **kwargs: Any) -> None:
        waiting.discard(client_id)

    events = runner.environment.events
    events.worker_report.add_listener(on_worker_report)
    try:
        deadline = time.monotonic() + timeout_s
        while waiting and time.monotonic() < deadline:
            gevent.sleep(0.05)
    finally:
        events.worker_report.remove_listener(on_worker_report)


def write_html_report(environment: Any, path: Path) -> None:
    """Locust's own HTML report of a run in this process (what `--html` writes)."""
    from locust.html import get_html_report

    path.write_text(get_html_report(environment, show_download_link=False))


def read_per_replica(path: Path) -> dict[str, dict[str, Any]]:
    """`per_replica` from the file a Locust run wrote (empty when it wrote none)."""
    if not path.exists() or not path.read_text().strip():
        return {}
    return per_replica(json.loads(path.read_text()))

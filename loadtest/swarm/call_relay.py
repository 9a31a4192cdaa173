"""How a finished call's record reaches the process that summarises the run.

Every user hands its call record to its runner as a Locust custom message. A worker's
runner sends it to the master over Locust's own worker-to-master channel; a master, or a
lone local runner, hands it to the `CallCollector` registered here. So the master holds
every call of the swarm, tagged with the worker that made it, however many workers run
on however many machines. When `LOADTEST_CALLS_FILE` names a file, the collector also
appends each record there as one JSON line (what `python -m loadtest scenario` reads).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from loadtest.users.flows import CallRecord

#: The custom message type a call record travels in.
CALL_MESSAGE = "lab_call"
#: The worker id of calls made in the collecting process itself (Locust's local runner).
LOCAL_WORKER = "local"


@dataclass
class CallCollector:
    """Every call record of a run as the master received it, with the worker that made it."""

    log_path: Path | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def receive(self, environment: Any = None, msg: Any = None, **kwargs: Any) -> None:
        """A Locust message listener: keep the record, tagged with its worker's id."""
        record = {**msg.data, "worker": msg.node_id or LOCAL_WORKER}
        self.calls.append(record)
        if self.log_path is not None:
            with self.log_path.open("a") as log:
                log.write(json.dumps(record, separators=(",", ":")) + "\n")

    def completed_by_worker(self, worker_ids: list[str]) -> dict[str, int]:
        """Completed calls per worker id, every given worker listed (0 when it made none)."""
        done = Counter(c["worker"] for c in self.calls if c["outcome"] == "completed")
        return {w: done.get(w, 0) for w in sorted(set(worker_ids) | set(done))}


def listen(environment: Any, log_path: str | None = None) -> CallCollector | None:
    """Register a collector on a master or local runner (workers only send); return it."""
    runner = environment.runner
    if runner is None or type(runner).__name__ == "WorkerRunner":
        return None
    collector = CallCollector(Path(log_path) if log_path else None)
    runner.register_message(CALL_MESSAGE, collector.receive)
    environment.call_collector = collector
    return collector


def deliver(environment: Any, record: CallRecord) -> None:
    """Send one finished call's record to whoever collects the run's calls."""
    environment.runner.send_message(CALL_MESSAGE, asdict(record))

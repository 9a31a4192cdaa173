"""The lab's control and the call relay, without processes: which faults are refused and why,
and how calls are counted per worker."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from loadtest.config import LoadTestConfig
from loadtest.labtab.control import ClusterControl, FaultRefused, shares
from loadtest.swarm.call_relay import CallCollector


def fake_cluster(up: list[str], down: list[str], redis: bool = False) -> Any:
    """A stand-in for `Cluster` with replicas up (a process) or down (none)."""
    replicas = {name: SimpleNamespace(process=object()) for name in up}
    replicas |= {name: SimpleNamespace(process=None) for name in down}
    return SimpleNamespace(
        replicas=dict(sorted(replicas.items())),
        versions=dict.fromkeys(replicas, 1),
        config=LoadTestConfig(),
        redis=object() if redis else None,
        events=[],
    )


@pytest.mark.parametrize(
    ("fault", "replica", "up", "down", "message"),
    [
        ("restart", None, ["r1", "r2"], [], "no replica is down: crash one first"),
        ("restart", "r1", ["r1"], ["r2"], "r1 is not down"),
        ("crash", "r2", ["r1"], ["r2"], "r2 is already down"),
        ("crash", None, [], ["r1"], "every replica is already down"),
        ("crash", "r9", ["r1"], [], "no replica 'r9'"),
        ("redis-outage", None, ["r1"], [], "no Redis"),
        ("scale-up", None, ["r1"], [], "unknown fault"),
    ],
)
def test_a_fault_that_cannot_happen_is_refused_with_the_reason(
    fault: str, replica: str | None, up: list[str], down: list[str], message: str
) -> None:
    control = ClusterControl(fake_cluster(up, down))
    with pytest.raises(FaultRefused, match=message):
        control.inject(fault, replica)
    assert control.busy is None


def test_crash_and_restart_pick_the_first_replica_up_and_the_first_down() -> None:
    control = ClusterControl(fake_cluster(["r2", "r3"], ["r1"]))
    assert control._plan("crash", None)[1] == {"replica": "r2"}
    assert control._plan("restart", None)[1] == {"replica": "r1"}


def test_shares_are_percent_of_the_counted_requests() -> None:
    assert shares({"r1": 30, "r2": 10, "r3": None}) == {"r1": 75.0, "r2": 25.0, "r3": 0.0}
    assert shares({"r1": 0}) == {"r1": 0.0}


def message(worker: str, outcome: str) -> Any:
    return SimpleNamespace(node_id=worker, data={"tool": "echo", "outcome": outcome})


def test_the_collector_counts_completed_calls_per_worker_and_logs_them(tmp_path: Path) -> None:
    collector = CallCollector(tmp_path / "calls.jsonl")
    for worker, outcome in [("a", "completed"), ("a", "lost"), ("b", "completed")]:
        collector.receive(msg=message(worker, outcome))
    assert collector.completed_by_worker(["a", "b", "idle"]) == {"a": 1, "b": 1, "idle": 0}
    logged = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(c["worker"], c["outcome"]) for c in logged] == [
        ("a", "completed"),
        ("a", "lost"),
        ("b", "completed"),
    ]

"""The summary of one load-test run: what the users lived through, in one JSON document.

Built from the call log (one line per flow) and the cluster's event log, with the
Locust JSON report for cross-checking totals. pandas and the notebooks read it.

A call is *held* when a legacy replica keeps its stream open while the user thinks (once
per call, however many questions it asks); a legacy call cut by a fault is *started
again* from its first question (`restarted`), where an MRTR round (or a task request) is
only *sent again* (`rounds_resent`), the user none the wiser. `re_prompts` counts the
answers users had to give again.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from loadtest.config import LoadTestConfig
from loadtest.swarm.locust_stats import CALL
from loadtest.swarm.tool_table import per_tool, percentiles_ms

#: What became of a call (`loadtest.users.flows.CallRecord.outcome`).
OUTCOMES = ("completed", "failed", "lost", "abandoned")


def read_calls(path: Path) -> list[dict[str, Any]]:
    """Every call record in a call log (JSON lines)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def locust_flow_totals(report: Any) -> dict[str, Any]:
    """Calls (`CALL` rows) and HTTP requests (by round kind) from Locust's `--json-file`
    report."""
    flows = [r for r in report or [] if r.get("method") == CALL]
    http = [r for r in report or [] if r.get("method") != CALL]
    by_kind = Counter[str]()
    failed_by_kind = Counter[str]()
    for row in http:
        by_kind[row.get("name", "")] += row.get("num_requests", 0)
        failed_by_kind[row.get("name", "")] += row.get("num_failures", 0)
    return {
        "flows": sum(r.get("num_requests", 0) for r in flows),
        "flow_failures": sum(r.get("num_failures", 0) for r in flows),
        "http_requests": sum(r.get("num_requests", 0) for r in http),
        "http_failures": sum(r.get("num_failures", 0) for r in http),
        "http_by_kind": dict(sorted(by_kind.items())),
        "http_failures_by_kind": {k: n for k, n in sorted(failed_by_kind.items()) if n},
    }


def held_calls(calls: list[dict[str, Any]]) -> int:
    """Legacy calls a replica held on an open stream while their user thought: each call
    that asked at least one question, counted once. MRTR and task calls hold none."""
    return sum(1 for c in _legacy(calls) if c.get("questions"))


def held_questions(calls: list[dict[str, Any]]) -> int:
    """The questions legacy calls waited on, each on a held stream."""
    return sum(len(c.get("questions", [])) for c in _legacy(calls))


def restarted_calls(calls: list[dict[str, Any]]) -> int:
    """Legacy calls started again from their first question after a cut (at least once)."""
    return sum(1 for c in _legacy(calls) if c.get("retries", 0) > 0)


def rounds_resent(calls: list[dict[str, Any]]) -> int:
    """Requests of MRTR and task calls sent again after a cut (the call went on)."""
    return sum(c.get("retries", 0) for c in calls if c.get("arch") == "mrtr" or c.get("task"))


def _legacy(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in calls if c.get("arch") != "mrtr" and not c.get("task")]


def drains(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each drain of a rolling upgrade: the replica, how long it drained, and what it still
    held when it was stopped (HAProxy sessions, requests in flight and held streams)."""
    return [
        {"replica": e["replica"], "drained_s": e["drained_s"], "still_held": e["still_held"]}
        for e in events
        if e.get("event") == "stop"
    ]


def summarize(
    config: LoadTestConfig,
    calls: list[dict[str, Any]],
    events: list[dict[str, Any]],
    *,
    swarm_started: float,
    swarm_ended: float,
    versions: dict[str, int],
    locust_report: Any = None,
    per_replica: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The run's summary document.

    `per_replica` is every replica's HTTP requests by round kind, as Locust's users saw
    them (`loadtest.swarm.locust_stats.read_per_replica`).
    """
    outcomes = Counter(c["outcome"] for c in calls)
    completed = [c for c in calls if c["outcome"] == "completed"]
    duration_s = max(swarm_ended - swarm_started, 1e-9)
    served = Counter(name for c in calls for name in c.get("served_by", []))
    faults = [
        {**e, "t": round(e["t"] - swarm_started, 3)} for e in events if e["t"] >= swarm_started - 1
    ]
    return {
        "arch": config.arch,
        "scenario": config.scenario,
        "started": len(calls),
        "completed": outcomes.get("completed", 0),
        "failed": outcomes.get("failed", 0),
        "lost": outcomes.get("lost", 0),
        # Calls whose user never answered (--never-answer): neither completed nor a miss.
        "abandoned": outcomes.get("abandoned", 0),
        "tasks": task_totals(calls),
        "held": held_calls(calls),
        "held_questions": held_questions(calls),
        "restarted": restarted_calls(calls),
        "rounds_resent": rounds_resent(calls),
        "re_prompts": sum(c.get("re_prompts", 0) for c in calls),
        "retries": sum(c.get("retries", 0) for c in calls),
        "latency_ms": percentiles_ms([c["latency_ms"] for c in completed]),
        "throughput_per_s": round(len(completed) / duration_s, 3),
        "replica_share": dict(sorted(served.items())),
        "per_replica": per_replica or {},
        "timeline": timeline(calls, swarm_started, swarm_ended),
        "faults": faults,
        "drains": drains(faults),
        "versions_after": versions,
        "errors": dict(Counter(c["error"] for c in calls if c.get("error")).most_common(10)),
        "per_tool": per_tool(calls),
        "duration_s": round(duration_s, 3),
        "config": {
            "replicas": config.replicas,
            "users": config.users,
            "rate_per_s": config.rate_per_s,
            "never_answer_share": config.never_answer_share,
            "max_connections": config.max_connections,
            "tool_cpu_ms": config.tool_cpu_ms,
            "think_time_median_s": config.think_time_median_s,
            "drain_timeout_s": config.drain_timeout_s,
            "fault_at_s": config.fault_at_s,
        },
        "locust": locust_flow_totals(locust_report),
        "calls": calls,
    }


def task_totals(calls: list[dict[str, Any]]) -> dict[str, int]:
    """What happened to the tasks, as their clients saw it.

    `started` counts tasks acknowledged (the client got a task id); `completed`, `failed`
    and `lost` split them by outcome; `taken_over` counts those another replica resumed.
    `refused` counts task calls that never became a task (their creation failed, e.g. the
    store was down), and `store_errors` the store errors clients waited out while polling.
    """
    tasks = [c for c in calls if c.get("task")]
    acknowledged = [c for c in tasks if c["task"].get("id")]
    outcomes = Counter(c["outcome"] for c in acknowledged)
    return {
        "started": len(acknowledged),
        "completed": outcomes.get("completed", 0),
        "failed": outcomes.get("failed", 0),
        "lost": outcomes.get("lost", 0),
        "taken_over": sum(bool(c["task"].get("taken_over")) for c in acknowledged),
        "refused": sum(c["outcome"] != "completed" for c in tasks if not c["task"].get("id")),
        "store_errors": sum(c["task"].get("store_errors", 0) for c in tasks),
    }


def timeline(
    calls: list[dict[str, Any]], swarm_started: float, swarm_ended: float
) -> list[dict[str, Any]]:
    """Per-second rows: calls ending in that second by outcome, calls open, median latency."""
    seconds = int(swarm_ended - swarm_started) + 1
    rows: list[dict[str, Any]] = [
        {"t": s, **dict.fromkeys(OUTCOMES, 0), "in_flight": 0, "p50_ms": None}
        for s in range(seconds)
    ]
    latencies: list[list[float]] = [[] for _ in range(seconds)]
    for call in calls:
        start = int(call["started"] - swarm_started)
        end = min(int(call["ended"] - swarm_started), seconds - 1)
        if 0 <= end < seconds:
            rows[end][call["outcome"]] += 1
            if call["outcome"] == "completed":
                latencies[end].append(call["latency_ms"])
        for s in range(max(start, 0), end + 1):
            rows[s]["in_flight"] += 1
    for row, values in zip(rows, latencies, strict=True):
        if values:
            row["p50_ms"] = round(float(np.median(values)), 2)
    return rows

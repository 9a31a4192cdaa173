"""The ranges a plan's figures must lie in before the lab runs them live.

The plan's reader (`labsim.study.plan.Plan.from_json`) checks each field's type and what
the simulation needs; a live check also starts processes, waits and sizes pools from the
figures, so each one it uses is held here to what this lab can run: a fleet within the
plan's own walk and one fewer exactly one below it, workers per replica within the CPU
pool the replica accepts, a think time, answer timeout, backoff and retry count that end
within a run, request sizes within the replica's body limit. A figure outside its range
is a `LoadTestError` that names its field, the range, and the value, before anything
starts.
"""

from __future__ import annotations

import math
from typing import Any

from labsim.study.plan import FleetVerdict, Plan
from loadtest.config import LoadTestError

#: The longest a live run waits on a user's answer, a think time or a retry's backoff (s).
MAX_WAIT_S = 600.0
#: The most CPU workers a live replica runs (its pool beside the event loop).
MAX_WORKERS_PER_REPLICA = 64
#: The most retries a live client makes of one call.
MAX_RETRIES = 20
#: The largest request a live call sends (the replica's body limit, 1 MiB).
MAX_REQUEST_BYTES = 1 << 20
#: The longest a round's work or a request's own work may take live (s).
MAX_ROUND_S = 10.0


def _number(value: Any, where: str, low: float, high: float, *, whole: bool = False) -> None:
    kind = int if whole else (int, float)
    if (
        isinstance(value, bool)
        or not isinstance(value, kind)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        what = "a whole number" if whole else "a number"
        raise LoadTestError(f"{where} must be {what} from {low:g} to {high:g}, got {value!r}")


def check_ranges(plan: Plan, source: str = "plan") -> None:
    """Refuse `plan` when a figure the live check uses lies outside its range."""
    request, params = plan.request, plan.params
    at = f"{source}: request."
    _number(request.answer_timeout_s, at + "answer_timeout_s", 1e-3, MAX_WAIT_S)
    _number(request.think_time_median_s, at + "think_time_median_s", 0.0, MAX_WAIT_S)
    _number(request.think_time_sigma, at + "think_time_sigma", 0.0, 3.0)
    _number(request.never_answer_share, at + "never_answer_share", 0.0, 1.0)
    _number(request.connection_limit, at + "connection_limit", 2, 10**6, whole=True)
    if request.round_cpu_ms is not None:
        _number(request.round_cpu_ms, at + "round_cpu_ms", 0.0, MAX_ROUND_S * 1e3)
    for k, share in enumerate(request.tool_mix):
        _number(share, f"{at}tool_mix[{k}]", 0.0, 1.0)
    at = f"{source}: params."
    cluster, client, workload = params.cluster, params.client, params.workload
    workers = MAX_WORKERS_PER_REPLICA
    _number(cluster.workers_per_replica, at + "cluster.workers_per_replica", 1, workers, whole=True)
    _number(cluster.worker_speed, at + "cluster.worker_speed", 1e-3, 1e3)
    _number(client.max_retries, at + "client.max_retries", 0, MAX_RETRIES, whole=True)
    _number(client.retry_backoff_s, at + "client.retry_backoff_s", 0.0, MAX_WAIT_S)
    _number(workload.request_bytes, at + "workload.request_bytes", 0, MAX_REQUEST_BYTES)
    _number(workload.request_overhead_s, at + "workload.request_overhead_s", 0.0, MAX_ROUND_S)
    _number(workload.round_cpu.mean_s, at + "workload.round_cpu.mean_s", 0.0, MAX_ROUND_S)
    _number(workload.round_cpu.cv, at + "workload.round_cpu.cv", 0.0, 100.0)
    for arch, answer in plan.architectures.items():
        at = f"{source}: architectures.{arch}."
        largest = request.max_replicas
        for name, verdict in (("", answer.fleet), ("largest_tried.", answer.largest_tried)):
            if verdict is not None:
                _fleet(verdict, at + name, largest)
        if answer.fleet is not None and answer.one_fewer is not None:
            _fleet(answer.one_fewer, at + "one_fewer.", largest)
            fewer, fleet = answer.one_fewer.replicas, answer.fleet.replicas
            if fewer != fleet - 1:
                raise LoadTestError(
                    f"{at}one_fewer.replicas must be one below the fleet's {fleet}, got {fewer}"
                )


def _fleet(verdict: FleetVerdict, where: str, largest: int) -> None:
    _number(verdict.replicas, where + "replicas", 1, largest, whole=True)
    _number(verdict.replications, where + "replications", 1, 10**4, whole=True)

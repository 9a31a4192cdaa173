"""Limits as the live server and balancer apply them: a full replica refuses every request
(the sticky answer among them), its health check fails and the balancer takes it out of
rotation, and latency percentiles count the calls that never completed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from labsim.model.metrics import COMPLETED, FAILED, quantile_counting_misses
from labsim.model.params import SimParams
from labsim.model.simulation import Simulation
from labsim.model.workload import DRAWS_PER_CALL, Workload


def small_cluster(connection_limit: int, **changes: object) -> SimParams:
    """One replica, calls to a one-question tool, nothing on the wire, no random delays."""
    settings: dict[str, object] = {
        "replicas": 1,
        "workers_per_replica": 1,
        "connection_limit": connection_limit,
        "keepalive_idle_s": 0.0,
        "health_check_interval_s": 0.0,
        "tools": ("get_weather",),
        "tool_mix": (1.0,),
        "network_rtt_s": 0.0,
        "warmup_s": 0.0,
        "horizon_s": 200.0,
    }
    return SimParams().with_overrides(**(settings | changes))


def run_calls(
    params: SimParams, architecture: str, calls: list[tuple[float, float, float]]
) -> tuple[Simulation, dict]:
    """Run exactly `calls`, each (arrival s, CPU per round s, think s), to their end."""
    sim = Simulation(params, architecture, seed=0)
    n = len(calls)
    sim.workload = Workload(
        arrival_s=np.array([c[0] for c in calls]),
        tool=np.zeros(n, dtype=np.int64),
        session=np.arange(n),
        cpu_s=np.array([[c[1]] * DRAWS_PER_CALL for c in calls]),
        think_s=np.array([[c[2]] * DRAWS_PER_CALL for c in calls]),
    )
    sim.is_task = [False] * n
    result = sim.run()
    return sim, result.summary | {"calls_frame": result.calls}


# Call 0 waits 10 s for its user, call 1 (arriving a second later) 100 s: when call 0's
# answer comes, two streams are open.
TWO_HELD = [(1.0, 0.001, 10.0), (2.0, 0.001, 100.0)]


def test_the_sticky_answer_is_refused_by_a_replica_at_its_limit() -> None:
    # Limit 3: two open streams, and the answer's connection would be the third.
    _, full = run_calls(small_cluster(3), "sticky", TWO_HELD)
    first = full["calls_frame"].iloc[0]
    assert full["refused_requests"] >= 1
    assert first["restarts"] >= 1  # the client gave the refused call up and started again
    assert first["outcome"] != COMPLETED or first["re_prompts"] >= 1
    # With room for the answer, the same call completes at the first try.
    _, roomy = run_calls(small_cluster(4), "sticky", TWO_HELD)
    first = roomy["calls_frame"].iloc[0]
    assert roomy["refused_requests"] == 0
    assert (first["outcome"], first["restarts"]) == (COMPLETED, 0)


@pytest.mark.parametrize("architecture", ["sse-store", "mrtr"])
def test_every_request_path_is_refused_at_the_limit(architecture: str) -> None:
    # Limit 2: one open connection is all a replica serves. A call held by a 100 s user
    # fills it (a stream under SSE; under MRTR nothing is held, so nothing is refused).
    calls = [(1.0, 0.001, 100.0), (2.0, 0.001, 1.0)]
    _, summary = run_calls(small_cluster(2), architecture, calls)
    if architecture == "mrtr":
        assert summary["refused_requests"] == 0
    else:
        assert summary["refused_requests"] >= 1


def test_a_full_replica_fails_its_health_check_and_leaves_rotation() -> None:
    checked = small_cluster(3, health_check_interval_s=0.3)
    # Two held streams fill it (the check's own connection would be the third); a call
    # arriving meanwhile finds no replica in rotation, as HAProxy answers 503 itself.
    calls = [*TWO_HELD, (5.0, 0.001, 1.0)]
    sim, summary = run_calls(checked, "sticky", calls)
    marks = [e for e in sim.recorder.events if e[1] in ("check-down", "check-up")]
    assert summary["down_marks"] >= 1
    assert marks[0][1] == "check-down" and 2.0 <= marks[0][0] <= 2.0 + 0.3 + 1e-9
    assert summary["unrouted_requests"] >= 1
    # Once a stream ends the check passes again and the replica is back (rise 1).
    assert any(kind == "check-up" for _, kind, *_ in marks)
    # Without checks nothing is marked down.
    unchecked_sim, unchecked = run_calls(small_cluster(3), "sticky", calls)
    assert unchecked["down_marks"] == 0
    assert not [e for e in unchecked_sim.recorder.events if e[1] == "check-down"]


def test_a_replica_whose_queue_outlasts_the_check_timeout_fails_it() -> None:
    busy = small_cluster(100, health_check_interval_s=0.3, health_check_timeout_s=2.0)
    # Twenty calls of 1 s of CPU each at once on one worker: the line lasts 20 s.
    calls = [(1.0, 1.0, 1.0)] * 20
    _, summary = run_calls(busy, "mrtr", calls)
    assert summary["down_marks"] >= 1


def test_latency_percentiles_count_a_failed_call_as_a_miss() -> None:
    assert quantile_counting_misses(np.array([1.0, 2.0, 3.0, math.inf]), 0.5) == 2.5
    assert quantile_counting_misses(np.array([1.0, 2.0, math.inf, math.inf]), 0.95) == math.inf
    # Twenty calls at once on a replica that serves one at a time (limit 2), each 5 s of
    # CPU: the client's retries run out for most, which fail.
    calls = [(1.0 + k * 1e-3, 5.0, 0.0) for k in range(20)]
    _, summary = run_calls(small_cluster(2, tools=("crunch",)), "mrtr", calls)
    frame = summary["calls_frame"]
    assert (frame["outcome"] == FAILED).sum() >= 2
    assert summary["completed_share"] < 0.95
    assert math.isfinite(summary["p95_latency_s"])  # over the completed calls alone
    assert summary["p95_latency_all_s"] == math.inf  # over every call: a miss


def test_connections_kept_for_reuse_count_against_the_limit() -> None:
    # Three requests at once on three workers, done at 1.5 s. Kept for reuse, their
    # connections stay open 5 s more: with a limit of 4 the health check's own would be
    # the fourth, so the replica is out of rotation until they close, not just while busy.
    calls = [(1.0 + k * 1e-4, 0.5, 0.0) for k in range(3)]

    def back_in_rotation_s(keepalive_s: float) -> float:
        params = small_cluster(
            4,
            workers_per_replica=3,
            keepalive_idle_s=keepalive_s,
            health_check_interval_s=0.3,
            tools=("crunch",),
        )
        sim, summary = run_calls(params, "mrtr", calls)
        assert summary["peak_replica_connections"] == 3
        return max(t for t, kind, *_ in sim.recorder.events if kind == "check-up")

    assert back_in_rotation_s(0.0) < 2.0
    assert 6.5 <= back_in_rotation_s(5.0) < 7.0


def test_a_worker_on_half_a_cpu_takes_twice_as_long() -> None:
    calls = [(1.0, 0.5, 0.0)]
    for speed, latency_s in ((1.0, 0.5), (0.5, 1.0), (0.25, 2.0)):
        params = small_cluster(10, tools=("crunch",), worker_speed=speed, request_overhead_s=0.0)
        _, summary = run_calls(params, "mrtr", calls)
        assert summary["p95_latency_s"] == pytest.approx(latency_s)
        assert summary["cpu_s"] == pytest.approx(latency_s)  # the worker's time it took

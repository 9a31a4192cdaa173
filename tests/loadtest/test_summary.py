"""A run's summary and the table the commands print: calls held counted once, calls started
again apart from requests sent again, drains, the fault and its failures in words."""

from __future__ import annotations

from typing import Any

import pytest

from loadtest.config import LoadTestConfig
from loadtest.scenarios.summary import summarize
from loadtest.scenarios.summary_table import print_table
from loadtest.swarm.failure_reasons import reason

STARTED = 1000.0


def call(arch: str, **fields: Any) -> dict[str, Any]:
    record = {
        "tool": "get_weather",
        "arch": arch,
        "started": STARTED + 1,
        "ended": STARTED + 2,
        "outcome": "completed",
        "latency_ms": 12.0,
        "retries": 0,
        "re_prompts": 0,
        "questions": [],
        "served_by": ["r1"],
        "task": {},
    }
    return record | fields


def upgrade(drained: dict[str, tuple[float, int]]) -> list[dict[str, Any]]:
    events = [{"t": STARTED + 5, "event": "upgrade start", "drain_timeout_s": 2.0}]
    t = STARTED + 5
    for replica, (drained_s, still_held) in drained.items():
        events.append({"t": t, "event": "drain", "replica": replica})
        t += drained_s
        events.append(
            {"t": t, "event": "stop", "replica": replica, "drained_s": drained_s,
             "still_held": still_held}
        )  # fmt: skip
        t += 1
        events.append({"t": t, "event": "ready", "replica": replica, "tool_version": 2})
    return [*events, {"t": t, "event": "upgrade done"}]


def summary(arch: str, calls: list[dict[str, Any]], events: list[dict[str, Any]]) -> Any:
    report = [
        {"method": "POST", "name": "answer post", "num_requests": 200, "num_failures": 6},
        {"method": "POST", "name": "sse call", "num_requests": 300, "num_failures": 0},
        {"method": "CALL", "name": "get_weather", "num_requests": 4, "num_failures": 1},
    ]
    return summarize(
        LoadTestConfig(arch=arch, scenario="rolling-upgrade"),
        calls,
        events,
        swarm_started=STARTED,
        swarm_ended=STARTED + 20,
        versions={"r1": 2, "r2": 2},
        locust_report=report,
    )


def test_held_counts_calls_and_restarts_are_apart_from_requests_sent_again() -> None:
    calls = [
        call("sticky", questions=[["login"], ["confirm"]]),
        # Cut once, started again: three questions asked in all, one of them twice.
        call("sticky", questions=[["login"], ["login"], ["city"]], retries=1, re_prompts=1),
        call("sticky", outcome="lost", questions=[["login"]], retries=8, error="cut"),
        # A task call holds no stream; its polls sent again are requests, not restarts.
        call("sticky", tool="echo", questions=[["text"]], retries=2, task={"id": "t1"}),
    ]
    s = summary("sticky", calls, upgrade({"r1": (2.1, 21), "r2": (0.04, 0)}))
    assert (s["held"], s["held_questions"]) == (3, 6)
    assert (s["restarted"], s["rounds_resent"], s["retries"], s["re_prompts"]) == (2, 2, 11, 1)
    assert s["drains"] == [
        {"replica": "r1", "drained_s": 2.1, "still_held": 21},
        {"replica": "r2", "drained_s": 0.04, "still_held": 0},
    ]
    mrtr = summary("mrtr", [call("mrtr", questions=[["login"]], retries=3)], [])
    assert (mrtr["held"], mrtr["restarted"], mrtr["rounds_resent"]) == (0, 0, 3)


def test_the_table_carries_the_fault_the_drains_and_why_requests_failed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sticky = summary(
        "sticky",
        [call("sticky", questions=[["login"]], retries=1, outcome="lost", error="stream broke")],
        upgrade({"r1": (2.1, 21), "r2": (2.05, 9)}),
    )
    mrtr = summary("mrtr", [call("mrtr")], upgrade({"r1": (0.04, 0), "r2": (0.05, 0)}))
    print_table([sticky, mrtr])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:11] == [
        "arch", "scenario", "calls", "done", "failed", "lost", "held", "restarted",
        "re-asked", "resent", "p50",
    ]  # fmt: skip
    # One call, lost after a restart: held once, started again once, nobody asked again.
    row = lines[2].split()
    assert row[:2] == ["sticky", "rolling-upgrade"]
    assert [int(n) for n in row[2:10]] == [1, 0, 0, 1, 1, 1, 0, 0]
    assert "sticky: fault: rolling upgrade from 5.0 s to 11.2 s" in lines
    assert (
        "sticky: drains: r1 2.10 s, r2 2.05 s (timeout 2 s); stopped with requests (held "
        "streams among them) still being served: r1 21, r2 9"
    ) in lines
    assert "mrtr: drains: r1 40 ms, r2 50 ms, each replica empty when stopped" in lines
    assert (
        "sticky: failures: 3.0% of answer post requests failed (6 of 200) during the rolling "
        f"upgrade (5.0-11.2 s): {reason('answer post', 'rolling-upgrade')}"
    ) in lines
    assert "sticky: calls not completed: 1 x stream broke" in lines


def test_requests_of_a_target_that_names_no_replica_are_said_as_such() -> None:
    from loadtest.scenarios.summary_table import headline

    base = {"faults": [], "tasks": {"started": 0, "refused": 0}, "failures": {}}
    unnamed = headline({**base, "per_replica": {"none": {"requests": 600}}})
    assert "HTTP requests: 600 (no replica named)" in unnamed
    named = headline({**base, "per_replica": {"r1": {"requests": 3}, "r2": {"requests": 4}}})
    assert "HTTP requests per replica: r1 3, r2 4" in named

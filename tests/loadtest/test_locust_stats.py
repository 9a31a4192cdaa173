"""Locust's statistics of a swarm: call rows apart from HTTP rows, rounds by kind, replicas.

Short headless swarms on real HAProxy, replicas and Locust, read back from Locust's own
JSON report, the run's summary and Locust's HTML report.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loadtest.config import LoadTestConfig
from loadtest.harness.haproxy import HAProxy
from loadtest.scenarios.run import run_scenario
from loadtest.swarm.locust_stats import (
    ANSWER_POST,
    ANSWER_RETRY,
    CALL,
    NO_REPLICA,
    ROUND_1,
    ROUND_KINDS,
    SESSION,
    SSE_CALL,
    STATE_RETRY,
    TASK_ANSWER,
    TASK_POLL,
    ReplicaCounts,
    per_replica,
    round_kind,
)
from server.harness.process import free_port

needs_haproxy = pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")


def quiet(line: str) -> None:
    pass


def call(**params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def test_each_request_body_has_its_round_kind() -> None:
    assert round_kind(call(name="get_weather")) == ROUND_1
    assert round_kind(call(name="x", inputResponses={}, requestState="s")) == ANSWER_RETRY
    assert round_kind(call(name="crunch", requestState="s")) == STATE_RETRY
    assert round_kind(call(name="get_weather"), streamed=True) == SSE_CALL
    assert round_kind({"jsonrpc": "2.0", "id": 3, "result": {"action": "accept"}}) == ANSWER_POST
    assert round_kind({"method": "initialize"}) == SESSION
    assert round_kind({"method": "tasks/get"}) == TASK_POLL
    assert round_kind({"method": "tasks/update"}) == TASK_ANSWER
    assert round_kind({"method": "ping"}) == "ping"


def test_replica_counts_travel_from_workers_and_add_up() -> None:
    worker, master = ReplicaCounts(), ReplicaCounts()
    for served_by, kind in [("r1", ROUND_1), ("r1", ANSWER_RETRY), ("r2", ROUND_1), (None, "x")]:
        worker.add(served_by, kind)
    master.merge(worker.take())
    assert worker.by_replica() == {}
    worker.add("r2", ROUND_1)
    master.merge(worker.take())
    table = per_replica(master.by_replica())
    assert table["r1"] == {"requests": 2, "kinds": {ANSWER_RETRY: 1, ROUND_1: 1}}
    assert table["r2"] == {"requests": 2, "kinds": {ROUND_1: 2}}
    assert table[NO_REPLICA]["requests"] == 1


IN_PROCESS_RUN = """
import sys
from pathlib import Path

import locust
from locust.env import Environment

from loadtest.swarm.locust_stats import install, write_html_report

install(locust.events)
env = Environment(user_classes=[], events=locust.events)
runner = env.create_local_runner()
env.events.init.fire(environment=env, runner=runner, web_ui=None)
for kind in ["round 1", "round 1", "answer retry"]:
    env.events.request.fire(request_type="POST", name=kind, response_time=5,
                            response_length=300, exception=None, context={})
env.events.request.fire(request_type="CALL", name="get_weather", response_time=12,
                        response_length=0, exception=None, context={})
env.events.request.fire(request_type="CALL", name="get_weather", response_time=40,
                        response_length=0, exception=RuntimeError("lost"), context={})
write_html_report(env, Path(sys.argv[1]))
"""


def test_a_swarm_in_one_process_writes_locusts_html_report_calls_outside_its_total(
    tmp_path: Path,
) -> None:
    html = tmp_path / "report.html"
    # Locust patches the standard library on import: keep it out of the test process.
    subprocess.run([sys.executable, "-c", IN_PROCESS_RUN, str(html)], check=True, timeout=60)
    (total,) = aggregated_rows(html.read_text())
    assert total["num_requests"] == 3 and total["num_failures"] == 0
    rows = embedded_rows(html.read_text(), "get_weather")
    (call,) = [r for r in rows if "num_requests" in r]
    assert (call["method"], call["num_requests"], call["num_failures"]) == (CALL, 2, 1)
    (error,) = [r for r in rows if "error" in r]
    assert error["occurrences"] == 1 and "lost" in error["error"]


def embedded_rows(html: str, name: str) -> list[dict[str, Any]]:
    """The rows named `name` a Locust HTML report embeds (statistics, errors)."""
    pattern = r'\{[^{}]*"name": NAME[^{}]*\}'.replace("NAME", json.dumps(name))
    return [json.loads(row) for row in re.findall(pattern, html)]


def aggregated_rows(html: str) -> list[dict[str, Any]]:
    """The `Aggregated` rows of the request statistics a Locust HTML report embeds."""
    return [row for row in embedded_rows(html, "Aggregated") if "num_requests" in row]


def check_counts(summary: dict[str, Any], html: str, tools: set[str]) -> set[str]:
    """What every run's statistics must show; the round kinds they have.

    Calls and HTTP requests are counted apart; every HTTP request was served by one
    replica (or none), no more, no less; Locust's own report agrees.
    """
    locust, replicas = summary["locust"], summary["per_replica"]
    assert locust["flows"] == summary["started"] > 0
    kinds = set(locust["http_by_kind"])
    assert kinds <= set(ROUND_KINDS)
    assert sum(v["requests"] for v in replicas.values()) == locust["http_requests"] > 0
    for kind, n in locust["http_by_kind"].items():
        assert sum(v["kinds"].get(kind, 0) for v in replicas.values()) == n, kind
    named = {name for name in replicas if name != NO_REPLICA}
    assert named == {f"r{i + 1}" for i in range(summary["config"]["replicas"])}
    # Locust's own Aggregated row counts the HTTP requests, not calls and rounds together.
    (total,) = aggregated_rows(html)
    assert total["num_requests"] == locust["http_requests"]
    assert total["num_failures"] == locust["http_failures"]
    rows = [r for tool in tools for r in embedded_rows(html, tool) if "num_requests" in r]
    calls = [r for r in rows if r["method"] == CALL]
    assert sum(r["num_requests"] for r in calls) == summary["started"]
    # A call row's size is no byte count it never had, least of all its rounds.
    assert all(r["avg_content_length"] == 0 for r in calls)
    return kinds


def run_command_line(args: list[str], out: Path) -> tuple[dict[str, Any], str]:
    """`python -m loadtest ARGS --json OUT`: the summary and what it printed."""
    command = [sys.executable, "-m", "loadtest", *args, "--json", str(out)]
    done = subprocess.run(
        command, check=True, capture_output=True, text=True, timeout=150, cwd=out.parent
    )
    return json.loads(out.read_text()), done.stdout


@needs_haproxy
@pytest.mark.integration
def test_the_command_line_keeps_mrtr_rounds_by_kind_and_locusts_html_report(
    tmp_path: Path,
) -> None:
    """An overload run: shedding `crunch` calls come back with their state only."""
    args = ["scenario", "overload", "--arch", "mrtr", "--replicas", "2", "--users", "6"]
    summary, printed = run_command_line([*args, "--duration", "6"], tmp_path / "overload.json")
    served = ", ".join(f"{r} {v['requests']}" for r, v in summary["per_replica"].items())
    assert f"mrtr: HTTP requests per replica: {served}" in printed
    check_counts(summary, (tmp_path / "overload.html").read_text(), {"crunch"})
    by_kind = summary["locust"]["http_by_kind"]
    assert by_kind[ROUND_1] > 0 and by_kind[STATE_RETRY] > 0, by_kind
    replicas = summary["per_replica"]
    assert any(replicas[r]["kinds"].get(STATE_RETRY) for r in ("r1", "r2")), replicas


@needs_haproxy
@pytest.mark.parametrize(
    ("arch", "expected"),
    [("mrtr", {ROUND_1, ANSWER_RETRY}), ("sticky", {SESSION, SSE_CALL, ANSWER_POST})],
)
@pytest.mark.integration
def test_calls_and_rounds_by_kind_are_separate_rows(
    arch: str, expected: set[str], tmp_path: Path
) -> None:
    config = LoadTestConfig(
        arch=arch,
        replicas=2,
        users=6,
        duration_s=5,
        think_time_median_s=0.1,
        tool_mix={"get_weather": 1.0, "update_work_item": 1.0},
    )
    summary = run_scenario(
        config, workdir=tmp_path, progress=quiet, html_path=tmp_path / "report.html"
    )
    assert summary["completed"] > 5, summary["errors"]
    kinds = check_counts(summary, (tmp_path / "report.html").read_text(), set(config.tool_mix))
    assert expected <= kinds, kinds
    # Locust's JSON report: calls of size 0 beside POST rows of their real sizes.
    report = json.loads((tmp_path / "locust.json").read_text())
    assert all(r["total_content_length"] == 0 for r in report if r["method"] == CALL)
    rounds = [r for r in report if r["method"] != CALL]
    assert {r["method"] for r in rounds} == {"POST"}
    assert all(r["total_content_length"] > 0 for r in rounds if r["name"] == ROUND_1)


@needs_haproxy
@pytest.mark.integration
def test_a_swarm_of_two_workers_counts_every_request_per_replica_on_its_master(
    tmp_path: Path,
) -> None:
    args = ["swarm", "--headless", "--arch", "mrtr", "--workers", "2", "--replicas", "2"]
    args += ["--users", "6", "--duration", "5", "--tools", "get_weather=1,update_work_item=1"]
    args += ["--master-port", str(free_port())]
    summary, _ = run_command_line(args, tmp_path / "swarm.json")
    assert summary["workers"] == 2
    tools = {"get_weather", "update_work_item"}
    kinds = check_counts(summary, (tmp_path / "swarm.html").read_text(), tools)
    assert {ROUND_1, ANSWER_RETRY} <= kinds, kinds

"""What verify-plan needs of the load test, live and short: open-loop arrivals on the
command line with the replicas' connection limit and the tool's CPU, and a plan checked
on a real cluster, judged or refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.harness.haproxy import HAProxy

pytestmark = pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")


def loadtest(*words: str, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loadtest", *words],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def make_plan(path: Path, *words: str) -> Path:
    """A plan of `labsim plan --json`, short to simulate."""
    command = [
        sys.executable, "-m", "labsim", "plan", "--think-time-median-s", "0.2",
        "--think-time-sigma", "0.5", "--never-answer", "0", "--vcpus", "1",
        "--connection-limit", "64",
        "--tool-mix", "get_weather=1", "--measure-s", "10", "--replications", "2",
        "--max-replications", "2", *words, "--json", str(path),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return path


def test_the_replicas_take_the_runs_connection_limit_and_cpu_settings() -> None:
    # One replica: two or more share a Redis task store, which only a cluster up has.
    config = LoadTestConfig(replicas=1, max_connections=7, cpu_workers=3, cpu_inline_max_ms=0.0)
    cluster = Cluster(config)
    replica = cluster.replica_config("r1", 1, cluster.keys.before_rotation())
    assert (replica.max_connections, replica.cpu_workers, replica.cpu_inline_max_ms) == (7, 3, 0)
    assert replica.answer_timeout_s == config.answer_timeout_s
    args = cluster.replica_argv(replica)
    pairs = dict(zip(args[::2], args[1::2], strict=True))
    assert pairs["--max-connections"] == "7" and pairs["--cpu-workers"] == "3"
    assert pairs["--answer-timeout-s"] == "30"
    plain = Cluster(LoadTestConfig(replicas=1))
    assert "--max-connections" not in plain.replica_argv(
        plain.replica_config("r1", 1, plain.keys.before_rotation())
    )


@pytest.mark.integration
def test_open_loop_arrivals_keep_coming_when_the_replica_cannot_keep_up(tmp_path: Path) -> None:
    """10 calls/s of 100 ms rounds on one replica, on its event loop: twice what it can
    serve. Closed-loop users would wait for their calls; open-loop arrivals do not."""
    out = tmp_path / "steady.json"
    result = loadtest(
        "scenario", "steady", "--arch", "mrtr", "--replicas", "1", "--rate", "10",
        "--think-time-median-s", "0.05", "--tools", "quote=1", "--max-connections", "64",
        "--tool-cpu-ms", "100", "--cpu-inline-max-ms", "1000", "--duration", "4",
        "--json", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert {"started", "completed", "lost"} <= set(summary)
    assert "p95" in summary["latency_ms"]
    # About 40 calls asked (Poisson: 40 +/- 6); a replica serving 5 a second completes fewer.
    assert summary["started"] >= 22
    assert summary["config"]["rate_per_s"] == 10 and summary["config"]["max_connections"] == 64
    assert summary["completed"] < summary["started"] or summary["latency_ms"]["p95"] > 1000


@pytest.fixture(scope="module")
def light_plan(tmp_path_factory: Any) -> Path:
    """A plan one replica meets with room to spare: 5 calls/s of 2 ms rounds."""
    path = tmp_path_factory.mktemp("plan") / "light.json"
    return make_plan(path, "--rate", "5", "--round-cpu-ms", "2", "--slo-p95-ms", "1000")


@pytest.mark.integration
def test_verify_plan_judges_the_plans_fleet_live(light_plan: Path, tmp_path: Path) -> None:
    out = tmp_path / "verified.json"
    result = loadtest(
        "verify-plan", str(light_plan), "--arch", "mrtr", "--duration", "4", "--warmup",
        "1", "--max-cpu-wait-share", "1", "--json", str(out),
    )  # fmt: skip
    document = json.loads(out.read_text())
    assert document["judged"], document.get("reason")
    mrtr = document["architectures"]["mrtr"]
    assert mrtr["replicas"] == 1
    assert {"completed_share", "p95_ms", "meets_slo"} <= set(mrtr["live"])
    assert "one_fewer" not in mrtr and "nothing smaller" in mrtr["one_fewer_reason"]
    assert mrtr["live"]["completed_share"] == 1.0 and mrtr["live"]["answered"] >= 8
    assert mrtr["verdict_held"] is True and result.returncode == 0
    assert "every verdict held" in result.stdout


@pytest.mark.integration
def test_verify_plan_refuses_to_judge_replicas_that_waited_for_the_cpu(
    light_plan: Path, tmp_path: Path
) -> None:
    """No replica runs without ever waiting for a CPU: with no wait allowed, the run is
    not judged, and the command says why."""
    out = tmp_path / "refused.json"
    result = loadtest(
        "verify-plan", str(light_plan), "--arch", "mrtr", "--duration", "3", "--warmup",
        "1", "--max-cpu-wait-share", "0", "--max-cpu-wait-of-slo", "0", "--json", str(out),
    )  # fmt: skip
    assert result.returncode == 3, result.stderr[-2000:]
    document = json.loads(out.read_text())
    assert document["judged"] is False
    assert "waited for a CPU" in document["reason"]
    assert document["architectures"]["mrtr"]["verdict_held"] is None
    assert "not judged" in result.stdout


@pytest.mark.integration
def test_a_plan_with_a_three_round_tool_is_judged_in_the_tools_own_shape(tmp_path: Path) -> None:
    """update_work_item asks twice, one question a round, and answers on its third round:
    played live by `rounds` in that shape (a user fails a call whose result took another),
    not refused for its rounds nor played by a tool of two."""
    plan = make_plan(
        tmp_path / "three.json", "--rate", "5", "--round-cpu-ms", "2", "--slo-p95-ms", "1000",
        "--tool-mix", "update_work_item=1",
    )  # fmt: skip
    out = tmp_path / "verified.json"
    result = loadtest(
        "verify-plan", str(plan), "--arch", "mrtr", "--duration", "4", "--warmup", "1",
        "--max-cpu-wait-share", "1", "--json", str(out),
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr[-2000:]
    document = json.loads(out.read_text())
    assert document["judged"], document.get("reason")
    mrtr = document["architectures"]["mrtr"]
    assert any("update_work_item -> rounds/3x1" in note for note in mrtr["notes"])
    assert "--tools rounds/3x1=1" in mrtr["command"]
    assert mrtr["live"]["answered"] >= 8 and mrtr["live"]["completed_share"] == 1.0
    assert mrtr["verdict_held"] is not None

"""The load test on real processes: HAProxy, replicas, Locust, and faults injected under load."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pandas as pd
import pytest

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.harness.haproxy import HAProxy
from loadtest.scenarios.run import crash_victim, progress_line, run_scenario
from loadtest.users.flows import run_mrtr_flow
from loadtest.users.http_interface import httpx_post
from loadtest.users.simulated_user import ThinkTime
from server.tools.crunch import CRUNCH_MAX_UNITS

pytestmark = pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")

SUMMARY_KEYS = {
    "arch", "scenario", "started", "completed", "failed", "lost", "re_prompts", "latency_ms",
    "throughput_per_s", "replica_share", "timeline", "faults",
}  # fmt: skip


def quiet(line: str) -> None:
    pass


@pytest.fixture(scope="module")
def mrtr_upgrade(tmp_path_factory: Any) -> dict[str, Any]:
    """The command line's rolling upgrade of 3 MRTR replicas under load, read back as JSON."""
    out = tmp_path_factory.mktemp("upgrade") / "summary.json"
    command = [
        sys.executable, "-m", "loadtest", "scenario", "rolling-upgrade", "--arch", "mrtr",
        "--replicas", "3", "--users", "12", "--duration", "12", "--fault-at", "2",
        "--tools", "link_accounts=3,get_weather=1,update_work_item=1", "--json", str(out),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=240)
    return json.loads(out.read_text())


@pytest.mark.integration
def test_rolling_upgrade_of_mrtr_under_load_loses_nothing(mrtr_upgrade: dict[str, Any]) -> None:
    s = mrtr_upgrade
    assert s["completed"] > 50
    assert s["failed"] == 0 and s["lost"] == 0, s["errors"]
    assert s["re_prompts"] == 0
    assert s["versions_after"] == {"r1": 2, "r2": 2, "r3": 2}
    assert [f["replica"] for f in s["faults"] if f["event"] == "ready"] == ["r1", "r2", "r3"]


@pytest.mark.integration
def test_link_accounts_spanning_the_upgrade_asks_only_the_changed_question(
    mrtr_upgrade: dict[str, Any],
) -> None:
    # The summary keeps totals; the per-call log has each call's questions round by round.
    calls = mrtr_upgrade["calls"]
    spanning = [c for c in calls if c["tool"] == "link_accounts" and len(c["questions"]) > 1]
    assert spanning, "no link_accounts call spanned a version change; lengthen the run"
    for call in spanning:
        first, *later = call["questions"]
        assert "github_login" in first
        for keys in later:
            assert len(keys) == 1 and keys[0] in ("microsoft_login", "google_login")
    assert any(later == [["microsoft_login"]] for _, *later in (c["questions"] for c in spanning))


@pytest.mark.integration
def test_summary_is_read_by_pandas_with_every_field(mrtr_upgrade: dict[str, Any]) -> None:
    assert set(mrtr_upgrade) >= SUMMARY_KEYS
    assert set(mrtr_upgrade["latency_ms"]) == {"p50", "p95", "p99"}
    timeline = pd.DataFrame(mrtr_upgrade["timeline"])
    assert {"t", "completed", "failed", "lost", "in_flight"} <= set(timeline.columns)
    assert timeline["completed"].sum() == mrtr_upgrade["completed"]
    faults = pd.DataFrame(mrtr_upgrade["faults"])
    assert {"t", "event"} <= set(faults.columns)
    share = pd.Series(mrtr_upgrade["replica_share"])
    assert set(share.index) == {"r1", "r2", "r3"} and (share > 0).all()


@pytest.mark.integration
def test_overload_moves_crunch_between_replicas_with_the_right_digest() -> None:
    config = LoadTestConfig(arch="mrtr", scenario="overload", replicas=3, users=9, duration_s=8)
    s = run_scenario(config, progress=quiet)
    assert s["completed"] > 5 and s["failed"] == 0 and s["lost"] == 0, s["errors"]
    moved = [c for c in s["calls"] if len(set(c["detail"].get("replicas", []))) > 1]
    assert moved, "no crunch call was offloaded to another replica"


@pytest.mark.integration
def test_a_killed_mrtr_replica_costs_no_call_the_round_is_sent_again() -> None:
    config = LoadTestConfig(arch="mrtr", replicas=2)
    with Cluster(config) as cluster, httpx.Client(timeout=30) as http:
        records = []
        flow = threading.Thread(
            target=lambda: records.append(
                run_mrtr_flow(
                    httpx_post(http, cluster.url),
                    "crunch",
                    {"units": CRUNCH_MAX_UNITS},
                    think=ThinkTime(0, 0, random.Random(1)),
                    rng=random.Random(1),
                )
            )
        )
        flow.start()
        victim = None
        deadline = time.monotonic() + 10
        while victim is None and time.monotonic() < deadline:
            victim = next((n for n in cluster.names if cluster.health(n).get("in_flight")), None)
        assert victim is not None, "the crunch never started"
        cluster.kill(victim)
        flow.join(60)
    (record,) = records
    assert record.outcome == "completed", record.error
    assert record.retries >= 1
    assert record.detail["replicas"][-1] != victim


@pytest.mark.integration
def test_rolling_upgrade_under_sticky_routing_with_a_short_drain_reprompts_users() -> None:
    """Drain timeout (0.5 s) shorter than think time (median 1.5 s): held calls are cut."""
    config = LoadTestConfig(
        arch="sticky",
        scenario="rolling-upgrade",
        replicas=3,
        users=10,
        duration_s=12,
        fault_at_s=2,
        think_time_median_s=1.5,
        drain_timeout_s=0.5,
    )
    s = run_scenario(config, progress=quiet)
    assert s["versions_after"] == {"r1": 2, "r2": 2, "r3": 2}
    cut = [f for f in s["faults"] if f["event"] == "stop" and f["still_held"] > 0]
    assert cut, "no replica was stopped while holding calls"
    assert s["re_prompts"] + s["lost"] > 0
    assert s["retries"] > 0
    assert s["re_prompts"] == sum(c["re_prompts"] for c in s["calls"])


@pytest.mark.integration
def test_a_killed_sticky_replica_loses_the_calls_it_held() -> None:
    config = LoadTestConfig(
        arch="sticky",
        scenario="crash",
        replicas=2,
        users=10,
        duration_s=10,
        fault_at_s=3,
        think_time_median_s=1.0,
        restart_delay_s=1.0,
    )
    s = run_scenario(config, progress=quiet)
    restarted = [c for c in s["calls"] if c["retries"] > 0]
    assert restarted, "no held call was cut by the crash"
    assert s["re_prompts"] > 0
    assert [f["event"] for f in s["faults"] if f["event"] in ("crash", "restarted")] == [
        "crash",
        "restarted",
    ]


def test_the_crashed_replica_is_drawn_at_random_the_same_for_the_same_seed() -> None:
    names = ["r1", "r2", "r3"]
    assert {crash_victim(names, 7) for _ in range(5)} == {crash_victim(names, 7)}
    assert {crash_victim(names, seed) for seed in range(30)} == set(names)


def test_the_progress_line_says_when_the_load_ended_and_how_long_calls_may_finish() -> None:
    config = LoadTestConfig(arch="sticky", scenario="steady", duration_s=15)
    assert progress_line(10, config).split() == ["10", "s", "/", "15", "s", "of", "load"]
    after = progress_line(35, config)
    assert after.split()[:2] == ["35", "s:"] and "/ 15 s" not in after
    assert "ended at 15 s" in after and f"until {15 + config.stop_timeout_s} s at most" in after


def idle_timeout_run(arch: str) -> dict[str, Any]:
    """Think time (median 1.2 s) longer than HAProxy's idle timeout (0.5 s), no keep-alives."""
    config = LoadTestConfig(
        arch=arch,
        scenario="idle-timeout",
        replicas=2,
        users=4,
        duration_s=6,
        think_time_median_s=1.2,
        lb_idle_timeout_s=0.5,
        max_retries=2,
        tool_mix={"get_weather": 1.0},
    )
    return run_scenario(config, progress=quiet)


@pytest.mark.integration
def test_a_short_idle_timeout_cuts_held_legacy_streams_and_no_mrtr_round() -> None:
    sticky = idle_timeout_run("sticky")
    assert sticky["held"] > 0
    assert sticky["retries"] > 0 and sticky["re_prompts"] > 0  # cut while the user thought
    assert sticky["lost"] > 0, "no legacy call ran out of restarts"
    assert [f["timeout_s"] for f in sticky["faults"] if f["event"] == "idle timeout"] == [0.5]
    mrtr = idle_timeout_run("mrtr")
    assert mrtr["completed"] > 0 and mrtr["held"] == 0
    assert mrtr["failed"] == 0 and mrtr["lost"] == 0 and mrtr["re_prompts"] == 0, mrtr["errors"]


@pytest.mark.integration
def test_a_store_outage_under_sse_store_cuts_the_calls_it_held_and_the_rest_go_on() -> None:
    config = LoadTestConfig(
        arch="sse-store",
        scenario="store-outage",
        replicas=2,
        users=6,
        duration_s=8,
        fault_at_s=2,
        restart_delay_s=1.0,
        think_time_median_s=0.5,
        tool_mix={"get_weather": 1.0},
    )
    s = run_scenario(config, progress=quiet)
    events = {f["event"]: f["t"] for f in s["faults"]}
    assert events["store up"] > events["store down"]
    assert s["held"] > 0 and s["retries"] > 0, "no held call met the outage"
    assert any(row["completed"] for row in s["timeline"] if row["t"] > events["store up"] + 1)

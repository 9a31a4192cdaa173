"""`python -m loadtest swarm`: Locust's distributed mode, `--target`, and the lab's routes."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from loadtest.harness.haproxy import HAProxy
from loadtest.labtab.control import requests_served
from server.harness.process import ServerProcess, free_port

needs_haproxy = pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")
SWARM = [sys.executable, "-m", "loadtest", "swarm"]
#: What the Lab tab's own script sends with a fault (`loadtest.labtab.caller`).
TAB = {"X-Lab-Tab": "1"}


def run_headless(args: list[str], out: Path) -> dict[str, Any]:
    command = [*SWARM, "--headless", "--master-port", str(free_port()), "--json", str(out)]
    done = subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=150, cwd=out.parent
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


@needs_haproxy
@pytest.mark.integration
def test_two_workers_report_every_call_to_the_master(tmp_path: Path) -> None:
    args = ["--arch", "sticky", "--workers", "2", "--replicas", "2", "--users", "8"]
    args += ["--fault", "crash", "--fault-at", "3"]
    summary = run_headless([*args, "--duration", "8"], tmp_path / "swarm.json")
    assert summary["workers"] == 2
    per_worker = summary["per_worker"]
    assert len(per_worker) == 2 and all(n > 0 for n in per_worker.values()), per_worker
    assert sum(per_worker.values()) == summary["completed"] > 0
    assert {c["worker"] for c in summary["calls"]} == set(per_worker)
    assert set(summary["replica_share"]) == {"r1", "r2"}
    crash = [f for f in summary["faults"] if f["event"] == "crash"]
    assert len(crash) == 1 and crash[0]["replica"] == "r1" and 2 < crash[0]["t"] < 8
    assert summary["scenario"] == "crash"
    # Both workers' HTTP requests per replica reached the master, and its HTML report.
    assert {"r1", "r2"} <= set(summary["per_replica"])
    assert "<html" in (tmp_path / "swarm.html").read_text().lower()


@pytest.mark.integration
def test_a_target_is_driven_without_a_cluster_of_its_own(tmp_path: Path) -> None:
    server = ServerProcess(replica_id="lone").start()
    try:
        args = ["--target", server.url, "--workers", "0", "--users", "3", "--duration", "4"]
        summary = run_headless(args, tmp_path / "target.json")
        served = requests_served(server.base_url)
    finally:
        server.stop()
    assert summary["target"] == server.url
    assert summary["completed"] > 0 and summary["failed"] == summary["lost"] == 0
    assert served is not None and served >= summary["completed"]  # our server answered
    assert summary["faults"][0]["event"] == "target"  # no cluster was started
    assert summary["versions_after"] == {} and summary["per_worker"] == {
        "local": summary["completed"]
    }


@pytest.mark.integration
def test_a_headless_swarm_prints_no_warning(tmp_path: Path) -> None:
    # Locust patches the standard library with gevent as it loads; loaded after ssl, it
    # warns of every module holding ssl's own classes (gevent's MonkeyPatchWarning).
    server = ServerProcess(replica_id="lone").start()
    try:
        command = [*SWARM, "--headless", "--master-port", str(free_port()), "--target"]
        command += [server.url, "--workers", "0", "--users", "1", "--duration", "1"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr, done.stderr


@contextlib.contextmanager
def web_swarm(tmp_path: Path, args: list[str], state: str = "running") -> Iterator[str]:
    """A swarm with its web UI and `args`, until its users reach `state`; its URL."""
    port = free_port()
    command = [*SWARM, *args, "--web-port", str(port), "--master-port", str(free_port())]
    with open(tmp_path / "swarm.log", "wb") as log:
        swarm = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: swarm.poll() is None and _state(url) == state, 90)
        yield url
    finally:
        swarm.terminate()
        try:
            swarm.wait(30)
        except subprocess.TimeoutExpired:
            swarm.kill()
            swarm.wait()
        assert swarm.returncode is not None


@pytest.fixture
def ui_swarm(tmp_path: Path) -> Iterator[str]:
    """A swarm with its web UI: two MRTR replicas, one worker, two users started at once."""
    flags = ["--replicas", "2", "--users", "2", "--think-time-median-s", "0.1"]
    with web_swarm(tmp_path, flags) as url:
        yield url


def _state(url: str) -> str | None:
    """The swarm's state as the UI's poll says it (`running` once workers have connected
    and the users started; `ready` while it waits for START)."""
    try:
        return str(httpx.get(f"{url}/stats/requests", timeout=2).json()["state"])
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def replicas_own_held_calls(url: str) -> dict[str, int]:
    """Each replica's held calls as it counts them itself: `/healthz` and `/metrics`."""
    own = {}
    for row in httpx.get(f"{url}/lab/replicas", timeout=10).json():
        base = f"http://127.0.0.1:{row['port']}"
        streams = httpx.get(f"{base}/healthz", timeout=5).json()["open_streams"]
        metrics = httpx.get(f"{base}/metrics", timeout=5).text
        (gauge,) = [
            line for line in metrics.splitlines() if line.startswith("legacy_open_streams ")
        ]
        assert float(gauge.split()[1]) == streams, (gauge, streams)
        own[row["id"]] = streams
    return own


@needs_haproxy
@pytest.mark.integration
def test_the_lab_tab_counts_each_held_call_once_as_the_replicas_do(tmp_path: Path) -> None:
    # No --users: the swarm waits for START, as its --help says; START as the form does.
    args = ["--arch", "sticky", "--replicas", "2", "--tools", "get_weather=1"]
    with web_swarm(tmp_path, [*args, "--think-time-median-s", "30"], state="ready") as url:
        started = httpx.post(f"{url}/swarm", data={"user_count": 6, "spawn_rate": 6}, timeout=10)
        assert started.status_code == 200 and started.json()["success"], started.text
        wait_for(lambda: _state(url) == "running", 30)

        def lab_tab() -> dict[str, int]:
            return {r["id"]: r["held"] for r in httpx.get(f"{url}/lab/replicas").json()}

        # Each user's first question holds its call while the user thinks (about 30 s).
        wait_for(lambda: sum(lab_tab().values()) == 6, 30)
        for _ in range(3):  # read again should a call end between the two readings
            shown, own = lab_tab(), replicas_own_held_calls(url)
            if shown == own:
                break
        assert shown == own and sum(own.values()) == 6, (shown, own)
        rows = httpx.get(f"{url}/lab/replicas", timeout=10).json()
        # In flight counts the held calls' requests too: never fewer than those held.
        assert all(r["in_flight"] >= r["held"] for r in rows), rows


def wait_for(condition: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def versions(url: str) -> dict[str, Any]:
    return {r["id"]: r["version"] for r in httpx.get(f"{url}/lab/replicas", timeout=10).json()}


@needs_haproxy
@pytest.mark.integration
def test_the_lab_routes_upgrade_crash_and_restart_a_running_swarm(ui_swarm: str) -> None:
    url = ui_swarm
    assert versions(url) == {"r1": 1, "r2": 1}

    def swarm_requests() -> int:
        return sum(r["swarm_requests"] for r in httpx.get(f"{url}/lab/replicas").json())

    wait_for(lambda: swarm_requests() > 0, 15)  # the workers' counts reach the master
    started = httpx.post(f"{url}/lab/faults/rolling-upgrade", headers=TAB, timeout=10)
    assert started.status_code == 202 and started.json()["tool_version"] == 2
    busy = httpx.post(f"{url}/lab/faults/crash", headers=TAB, timeout=10)
    assert busy.status_code == 409 and "still running" in busy.json()["error"]
    wait_for(lambda: versions(url) == {"r1": 2, "r2": 2}, 60)

    def crash_r2() -> int:
        return httpx.post(
            f"{url}/lab/faults/crash", json={"replica": "r2"}, headers=TAB
        ).status_code

    wait_for(lambda: crash_r2() == 202, 30)

    def health() -> dict[str, str]:
        rows = httpx.get(f"{url}/lab/replicas", timeout=10).json()
        return {r["id"]: r["health"] for r in rows}

    wait_for(lambda: health()["r2"] == "down", 10)
    assert httpx.post(f"{url}/lab/faults/restart", headers=TAB, timeout=10).json() == {
        "fault": "restart",
        "replica": "r2",
        "said": "r2 starting again",
    }
    wait_for(lambda: health() == {"r1": "ok", "r2": "ok"}, 30)
    events = [e["event"] for e in httpx.get(f"{url}/lab/events", timeout=10).json()]
    assert events.index("upgrade done") < events.index("crash") < events.index("restarted")
    stats = httpx.get(f"{url}/stats/requests", timeout=10).json()
    assert [t["key"] for t in stats["extended_stats"]] == ["lab", "lab-timeline", "lab-tools"]


def test_a_swarm_on_a_target_refuses_faults_with_409() -> None:
    from flask import Flask

    from loadtest.labtab import tab
    from loadtest.labtab.control import TargetControl

    web_ui = SimpleNamespace(app=Flask("lab"), template_args={})
    tab.install(web_ui, TargetControl(f"http://127.0.0.1:{free_port()}/mcp"), sample_every_s=None)
    client = web_ui.app.test_client()
    for fault in ("rolling-upgrade", "crash", "restart"):
        refused = client.post(f"/lab/faults/{fault}", headers=TAB)
        assert refused.status_code == 409
        assert "faults come from its operator" in refused.get_json()["error"]
    assert client.get("/lab/replicas").get_json() == []
    chart = client.get("/lab/chart").get_json()
    assert (chart["traffic"], chart["load"], chart["failures"]) == ([], [], [])
    (target,) = client.get("/lab/events").get_json()
    assert target["said"].endswith("faults come from its operator")
    tabs = [t["key"] for t in web_ui.template_args["extended_tabs"]]
    assert tabs == ["lab", "lab-timeline", "lab-tools"]

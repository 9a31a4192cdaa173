"""A scenario run: a cluster, a headless Locust swarm against it, and a fault at a set time.

    steady           no fault
    rolling-upgrade  every replica drained, replaced by tool version 2 with rotated keys
    crash            one replica killed (SIGKILL), restarted after a delay
    overload         users call `crunch`; MRTR replicas over their in-flight threshold shed
                     their progress in requestState and another replica resumes
    store-outage     Redis (SSE + store, and the task store) killed, restarted on its data
    idle-timeout     HAProxy cuts connections idle longer than a think time, keep-alive
                     comments off: held legacy streams are cut, MRTR rounds are not

Locust runs as a subprocess (`--headless --json-file`), which keeps its gevent world out
of this process and out of Jupyter kernels.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import USERS_CPUS, USERS_SECRET_ENV, Cluster
from loadtest.harness.upgrade import rolling_upgrade
from loadtest.scenarios.summary import read_calls, summarize
from loadtest.swarm.locust_stats import REPLICAS_FILE_ENV, read_per_replica
from loadtest.swarm.user_classes import LOCUSTFILE, USER_CLASSES
from server.harness.process import pinned


def locust_command(
    config: LoadTestConfig, host: str, json_path: Path, html_path: Path | None = None
) -> list[str]:
    """The headless Locust command for a run; `html_path` keeps Locust's HTML report."""
    html = ["--html", str(html_path)] if html_path else []
    return pinned([
        sys.executable, "-m", "locust",
        "-f", str(LOCUSTFILE),
        "--headless",
        "--host", host.removesuffix("/mcp"),
        "--users", str(config.locust_users),
        "--spawn-rate", str(config.spawn_rate),
        "--run-time", f"{math.ceil(config.duration_s)}s",
        # Let calls in progress finish when the time is up, so they are not counted as lost.
        "--stop-timeout", str(config.stop_timeout_s),
        "--json-file", str(json_path.with_suffix("")),
        "--only-summary",
        "--loglevel", "WARNING",
        *html,
        USER_CLASSES[config.arch],
    ], USERS_CPUS if config.pin_cores else None)  # fmt: skip


def inject_fault(cluster: Cluster, config: LoadTestConfig) -> None:
    """The scenario's fault, at the point it is called."""
    if config.scenario == "rolling-upgrade":
        rolling_upgrade(cluster, drain_timeout_s=config.drain_timeout_s)
    elif config.scenario == "crash":
        victim = crash_victim(cluster.names, config.seed)
        cluster.kill(victim)
        time.sleep(config.restart_delay_s)
        cluster.restart(victim)
    elif config.scenario == "store-outage":
        cluster.store_outage(config.restart_delay_s)
    elif config.scenario == "overload":
        cluster.log("overload", users=config.users, shed_in_flight=config.shed_in_flight)
    elif config.scenario == "idle-timeout":
        cluster.log("idle timeout", timeout_s=cluster.idle_timeout_s, keepalive="off")


def crash_victim(names: list[str], seed: int | None) -> str:
    """The replica a crash kills: drawn at random, the same one for the same seed."""
    return random.Random(seed).choice(names)


def run_scenario(
    config: LoadTestConfig,
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    on_cluster: Callable[[Cluster, str], None] | None = None,
    html_path: Path | None = None,
) -> dict[str, Any]:
    """Run one scenario end to end and return its summary.

    `on_cluster(cluster, moment)` is called when the swarm starts ("before") and when it
    has finished ("after"), while the cluster is up: a hook for measuring it.
    `html_path` is where Locust's own HTML report goes (none is kept without it).
    """
    hook = on_cluster or (lambda cluster, moment: None)
    with tempfile.TemporaryDirectory(prefix="mrtr-loadtest-") as tmp:
        work = workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        calls_path = work / "calls.jsonl"
        calls_path.unlink(missing_ok=True)
        json_path = work / "locust.json"
        replicas_path = work / "replicas.json"
        replicas_path.unlink(missing_ok=True)
        started_path = work / "started"
        started_path.unlink(missing_ok=True)
        progress(f"{config.arch}/{config.scenario}: starting {config.replicas} replicas")
        with Cluster(config, workdir=work / "cluster") as cluster:
            env = {
                **os.environ,
                "LOADTEST_CONFIG": json.dumps(dataclasses.asdict(config)),
                "LOADTEST_CALLS_FILE": str(calls_path),
                "LOADTEST_STARTED_FILE": str(started_path),
                USERS_SECRET_ENV: cluster.jwt_secret,
                REPLICAS_FILE_ENV: str(replicas_path),
                "PYTHONWARNINGS": "ignore",
            }
            who = (
                f"{config.rate_per_s:g} calls/s (open loop)"
                if config.rate_per_s
                else f"{config.users} users"
            )
            progress(f"swarm: {who} for {config.duration_s:g} s against {cluster.url}")
            with open(work / "locust.log", "ab") as locust_log:
                swarm = subprocess.Popen(
                    locust_command(config, cluster.url, json_path, html_path),
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=locust_log,
                    start_new_session=True,
                )
            # A short idle timeout is not an event but a setting: in force from the start.
            at_s = 0.0 if config.scenario == "idle-timeout" else config.fault_at_s
            fault = threading.Timer(at_s, inject_fault, (cluster, config))
            try:
                started = _wait_for_start(swarm, started_path)
                hook(cluster, "before")
                if config.scenario != "steady":
                    fault.start()
                _wait(swarm, config, progress)
            finally:
                fault.cancel()
                if fault.is_alive():
                    fault.join()
                if swarm.poll() is None:
                    swarm.kill()
                    swarm.wait()
            ended = time.time()
            hook(cluster, "after")
            report = json.loads(json_path.read_text()) if json_path.exists() else None
            summary = summarize(
                config,
                read_calls(calls_path),
                cluster.events,
                swarm_started=started,
                swarm_ended=ended,
                versions=dict(cluster.versions),
                locust_report=report,
                per_replica=read_per_replica(replicas_path),
            )
    progress(
        f"done: {summary['completed']} completed, {summary['failed']} failed, "
        f"{summary['lost']} lost, {summary['re_prompts']} re-prompts"
    )
    return summary


def _wait_for_start(swarm: subprocess.Popen, marker: Path, timeout_s: float = 60.0) -> float:
    """When the swarm's users started (Locust writes the marker on test start)."""
    deadline = time.monotonic() + timeout_s
    while not marker.exists() or not marker.read_text():
        if swarm.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the Locust swarm did not start; see locust.log")
        time.sleep(0.05)
    return float(marker.read_text())


def _wait(swarm: subprocess.Popen, config: LoadTestConfig, progress: Callable[[str], None]) -> None:
    # Beyond the run: the calls still running get the stop timeout, Locust a minute more.
    slack_s = config.stop_timeout_s + 60
    deadline = time.monotonic() + config.duration_s + slack_s
    last = 0
    while swarm.poll() is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the Locust swarm did not finish in time")
        elapsed = int(time.monotonic() - (deadline - config.duration_s - slack_s))
        if elapsed >= last + 5:
            last = elapsed
            progress(progress_line(elapsed, config))
        time.sleep(0.2)


def progress_line(elapsed_s: int, config: LoadTestConfig) -> str:
    """A running swarm's progress: seconds of load against the run's duration, then, once
    the load is over, the wait for the calls still running and its limit."""
    if elapsed_s <= config.duration_s:
        return f"  {elapsed_s:>4d} s / {config.duration_s:g} s of load"
    until_s = config.duration_s + config.stop_timeout_s
    return (
        f"  {elapsed_s:>4d} s: the load ended at {config.duration_s:g} s; finishing the calls "
        f"still running (until {until_s:g} s at most)"
    )

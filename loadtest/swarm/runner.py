"""A Locust swarm against the lab's own cluster or an existing endpoint, with the lab's tab.

The Locust master runs in this process, as a library, beside the cluster it drives: its
web UI can then show each replica and inject faults into the very cluster under load
(`loadtest.swarm.lab_tab`). The users run in `--workers` local worker processes (Locust's own
distributed mode), in workers joining from other machines, or, with no worker, in this
process. Each finished call travels to the master as a Locust message
(`loadtest.swarm.call_relay`), so the summary counts every call of every worker.

    swarm against the lab's cluster    python -m loadtest swarm --arch sticky --workers 2
    scripted                           ... --headless --users 8 --duration 25 --json F
    an existing endpoint               ... --target http://host:port/mcp
    workers for a master elsewhere     python -m loadtest swarm --join MASTER:5557 --workers 4
"""

from __future__ import annotations

# Importing locust patches the standard library with gevent, which must come before
# httpx and ssl load: keep this import first.
import locust  # isort: split

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
from gevent.event import Event
from locust.argument_parser import get_parser
from locust.env import Environment
from locust.rpc import Message
from locust.runners import STATE_INIT, STATE_STOPPED, MasterRunner
from locust.stats import stats_history

from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.harness.cluster import Cluster
from loadtest.swarm import lab_tab
from loadtest.swarm.call_relay import LOCAL_WORKER, CallCollector
from loadtest.swarm.lab_control import ClusterControl, FaultRefused, TargetControl
from loadtest.swarm.locust_stats import (
    REPLICA_COUNTS,
    await_worker_reports,
    per_replica,
    write_html_report,
)
from loadtest.swarm.scenario_run import LOCUSTFILE, USER_CLASSES
from loadtest.swarm.summary import summarize

#: Locust's default port for workers to reach their master.
DEFAULT_MASTER_PORT = 5557


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _stop_on_signals() -> Event:
    """An event set by Ctrl-C or SIGTERM: the swarm then stops and everything is cleaned up."""
    stop = Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        gevent.signal_handler(sig, stop.set)
    return stop


def _worker_env(config: LoadTestConfig) -> dict[str, str]:
    return {
        **os.environ,
        "LOADTEST_CONFIG": json.dumps(dataclasses.asdict(config)),
        "PYTHONWARNINGS": "ignore",
    }


def start_workers(
    config: LoadTestConfig, count: int, master_host: str, master_port: int, log_dir: Path
) -> list[subprocess.Popen]:
    """`count` Locust worker processes connecting to the master at host:port."""
    command = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--worker",
        "--master-host", master_host, "--master-port", str(master_port),
        "--loglevel", "WARNING",
    ]  # fmt: skip
    workers = []
    for i in range(count):
        with open(log_dir / f"worker-{i + 1}.log", "ab") as log:
            workers.append(
                subprocess.Popen(
                    command,
                    env=_worker_env(config),
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                )
            )
    return workers


def stop_workers(workers: list[subprocess.Popen], timeout_s: float = 10.0) -> None:
    """Stop local workers (SIGTERM: Locust's worker says goodbye to its master and exits);
    kill any still running after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    for worker in workers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.wait(max(0.1, deadline - time.monotonic()))
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def wait_for_workers(
    runner: Any, expected: int, workers: list[subprocess.Popen], timeout_s: float = 60.0
) -> None:
    """Until `expected` workers have connected to the master."""
    deadline = time.monotonic() + timeout_s
    while runner.worker_count < expected:
        if any(w.poll() is not None for w in workers):
            raise LoadTestError("a Locust worker exited before the swarm started; see its log")
        if time.monotonic() > deadline:
            raise LoadTestError(f"{runner.worker_count} of {expected} workers connected in time")
        gevent.sleep(0.1)


def run_workers(config: LoadTestConfig, master: str, count: int) -> int:
    """Only workers, for a master on another machine (`--join HOST[:PORT]`)."""
    host, _, port = master.partition(":")
    stop = _stop_on_signals()
    with tempfile.TemporaryDirectory(prefix="mrtr-workers-") as tmp:
        workers = start_workers(config, count, host, int(port or DEFAULT_MASTER_PORT), Path(tmp))
        _say(f"{count} workers joining the master at {host}:{port or DEFAULT_MASTER_PORT}")
        try:
            while not stop.is_set() and any(w.poll() is None for w in workers):
                stop.wait(0.5)
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.terminate()
            stop_workers(workers)
    return 0


def run_swarm(
    config: LoadTestConfig,
    *,
    workers: int = 1,
    expect_workers: int = 0,
    target: str | None = None,
    headless: bool = False,
    start_users: bool = False,
    web_port: int = 8089,
    master_bind: str = "127.0.0.1",
    master_port: int = DEFAULT_MASTER_PORT,
    html_path: Path | None = None,
    fault: str | None = None,
    say: Callable[[str], None] = _say,
) -> dict[str, Any] | None:
    """Run the swarm; after a headless run, its summary (and Locust's HTML report at
    `html_path`, when given)."""
    stop = _stop_on_signals()
    os.environ["LOADTEST_CONFIG"] = json.dumps(dataclasses.asdict(config))
    from loadtest.swarm import locustfile  # reads LOADTEST_CONFIG (the local runner's users)

    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mrtr-swarm-")))
        cluster = None if target else stack.enter_context(Cluster(config, workdir=work / "c"))
        url = target if cluster is None else cluster.url
        assert url is not None
        host = url.removesuffix("/mcp")
        locust_args = [
            "-f", str(LOCUSTFILE), "--host", host, "-u", str(config.users),
            "-r", str(config.spawn_rate), *(["--headless"] if headless else []),
        ]  # fmt: skip
        options = get_parser(default_config_files=[]).parse_args(locust_args)
        # Locust's web UI parses sys.argv again on every page: give it Locust's arguments.
        sys.argv = [sys.argv[0], *locust_args]
        env = Environment(
            user_classes=[getattr(locustfile, USER_CLASSES[config.arch])],
            events=locust.events,
            host=host,
            parsed_options=options,
            # Let calls in progress finish when the swarm stops, so they are not lost.
            stop_timeout=max(10, int(config.think_time_median_s * 20)),
        )
        distributed = workers > 0 or expect_workers > 0
        runner = (
            env.create_master_runner(master_bind, master_port)
            if distributed
            else env.create_local_runner()
        )

        def collector() -> CallCollector | None:
            return getattr(env, "call_collector", None)

        control = ClusterControl(cluster) if cluster else TargetControl(url)
        web_ui = None
        if not headless:
            web_ui = env.create_web_ui("127.0.0.1", web_port, delayed_start=True)
            lab_tab.install(web_ui, control)
            stack.callback(web_ui.stop)
        env.events.init.fire(environment=env, runner=runner, web_ui=web_ui)
        gevent.spawn(stats_history, runner)
        procs = start_workers(config, workers, "127.0.0.1", master_port, work)
        ids: list[str] = []
        stack.callback(stop_workers, procs)
        stack.callback(runner.quit)
        stack.callback(_quit_stopped_workers, runner, ids)  # first: before the master quits
        say(f"{config.arch} swarm against {url}: {workers} local workers")
        wait_for_workers(runner, workers + expect_workers, procs)
        ids += list(runner.clients.keys()) if isinstance(runner, MasterRunner) else [LOCAL_WORKER]
        started = time.time()
        if headless:
            runner.start(config.users, config.spawn_rate)
            if fault:
                gevent.spawn_later(config.fault_at_s, _inject_on_cue, control, fault, say)
        if web_ui is not None:
            if start_users:
                # Serve the UI once the users run: a page opened before shows the start form.
                gevent.spawn(runner.start, config.users, config.spawn_rate)
                _wait_state(runner, lambda state: state != STATE_INIT, 30)
            web_ui.start()
            say(f"Locust web UI with the lab's tab: http://127.0.0.1:{web_port}/?tab=lab")
            stop.wait()
            say("stopping the swarm")
            return None
        say(f"swarm: {config.users} users for {config.duration_s:g} s")
        stop.wait(config.duration_s)
        runner.stop()
        _wait_stopped(runner, env.stop_timeout + 30)
        ended = time.time()
        await_worker_reports(runner, ids)
        calls = collector() or CallCollector()
        summary = summarize(
            config,
            calls.calls,
            control.events,
            swarm_started=started,
            swarm_ended=ended,
            versions=dict(cluster.versions) if cluster else {},
            locust_report=[e.to_dict() for e in runner.stats.entries.values()],
            per_replica=per_replica(REPLICA_COUNTS.by_replica()),
        )
        if html_path is not None:
            write_html_report(env, html_path)
        summary["target"] = target
        if fault:  # the run's scenario is the fault injected on cue
            summary["scenario"] = fault
        summary["workers"] = len(ids)
        summary["per_worker"] = calls.completed_by_worker(ids)
        return summary
    return None


def _inject_on_cue(control: ClusterControl | TargetControl, fault: str, say: Any) -> None:
    try:
        say(f"fault: {control.inject(fault)}")
    except FaultRefused as refused:
        say(f"fault refused: {refused}")


def _quit_stopped_workers(runner: Any, ids: list[str]) -> None:
    """Tell workers that stopped their users to quit too (the master's own quit reaches
    only the workers still running users): remote workers then exit with their master."""
    if isinstance(runner, MasterRunner):
        for worker_id in ids:
            if worker_id not in runner.clients:
                runner.server.send_to_client(Message("quit", None, worker_id))


def _wait_state(runner: Any, reached: Callable[[str], bool], timeout_s: float) -> None:
    """Until the runner's state is one `reached` accepts, or `timeout_s` has passed."""
    deadline = time.monotonic() + timeout_s
    while not reached(runner.state) and time.monotonic() < deadline:
        gevent.sleep(0.1)


def _wait_stopped(runner: Any, timeout_s: float) -> None:
    """Until every user has stopped (workers report back to a master)."""
    _wait_state(runner, lambda state: state == STATE_STOPPED, timeout_s)
    if isinstance(runner, MasterRunner) and runner.state != STATE_STOPPED:
        _say(f"warning: workers still not stopped after {timeout_s:g} s")

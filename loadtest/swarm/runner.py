"""A Locust swarm against the lab's own cluster or an existing endpoint, with the lab's tab.

The Locust master runs in this process, as a library, beside the cluster it drives: its
web UI can then show each replica and inject faults into the very cluster under load
(`loadtest.labtab.tab`). The users run in `--workers` local worker processes (Locust's own
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
from loadtest.harness.cluster import USERS_CPUS, USERS_SECRET_ENV, Cluster
from loadtest.labtab import tab
from loadtest.labtab.control import ClusterControl, FaultRefused, TargetControl
from loadtest.labtab.web_server import serve_with_head_deadline
from loadtest.probes.replica_cpu import CpuMeter, children
from loadtest.scenarios.summary import summarize
from loadtest.swarm.call_relay import LOCAL_WORKER, CallCollector
from loadtest.swarm.locust_stats import (
    REPLICA_COUNTS,
    await_worker_reports,
    per_replica,
    write_html_report,
)
from loadtest.swarm.plan import LOCUST_MASTER_PORT, SwarmPlan
from loadtest.swarm.rate_ceiling import (
    REPLICA_READ_EVERY_S,
    RateSteps,
    ReplicaTime,
    ceiling,
    ceiling_search,
)
from loadtest.swarm.shaped_run import drive, shape_for
from loadtest.swarm.target_mix import exported_mix
from loadtest.swarm.user_classes import LOCUSTFILE, TARGET_USER_CLASS, USER_CLASSES
from server.harness.process import pin_this_process, pinned


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
    command = pinned(command, USERS_CPUS if config.pin_cores else None)
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
        workers = start_workers(config, count, host, int(port or LOCUST_MASTER_PORT), Path(tmp))
        _say(f"{count} workers joining the master at {host}:{port or LOCUST_MASTER_PORT}")
        try:
            while not stop.is_set() and any(w.poll() is None for w in workers):
                stop.wait(0.5)
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.terminate()
            stop_workers(workers)
    return 0


@dataclasses.dataclass
class _Swarm:
    """A swarm set up in this process: Locust's environment and runner, the cluster it
    drives (None for a `--target`), the lab's control of it, and its workers' ids."""

    env: Environment
    runner: Any
    cluster: Cluster | None
    control: ClusterControl | TargetControl
    worker_ids: list[str] = dataclasses.field(default_factory=list)


def run_swarm(
    config: LoadTestConfig, plan: SwarmPlan, say: Callable[[str], None] = _say
) -> dict[str, Any] | None:
    """Run the swarm; after a headless run, its summary (and Locust's HTML report at
    `plan.html_path`, when given). With the web UI, it runs until Ctrl-C or SIGTERM."""
    stop = _stop_on_signals()
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mrtr-swarm-")))
        cluster = None
        if plan.target is None:
            cluster = stack.enter_context(Cluster(config, workdir=work / "c"))
        url = cluster.url if cluster is not None else str(plan.target)
        if config.pin_cores:
            pin_this_process(USERS_CPUS)  # the users run here; the lab's replicas have CPU 0
        # Each user mints a token of its own with the cluster's secret (a target's, when
        # MRTR_JWT_SECRET names it), here and in the workers, which inherit the environment.
        secret = cluster.jwt_secret if cluster else os.environ.get("MRTR_JWT_SECRET", "")
        os.environ[USERS_SECRET_ENV] = secret
        user_class = TARGET_USER_CLASS if _drives_target(plan) else USER_CLASSES[config.arch]
        env = _environment(config, url, plan.headless, user_class)
        runner = (
            env.create_master_runner(plan.master_bind, plan.master_port)
            if plan.workers > 0 or plan.expect_workers > 0
            else env.create_local_runner()
        )
        control = ClusterControl(cluster) if cluster else TargetControl(url)
        swarm = _Swarm(env, runner, cluster, control)
        web_ui = None if plan.headless else _web_ui(swarm, plan.web_port, stack)
        env.events.init.fire(environment=env, runner=runner, web_ui=web_ui)
        gevent.spawn(stats_history, runner)
        what = "its own tools" if plan.target else f"the {config.arch} users"
        say(f"swarm against {url} ({what}): {plan.workers} local workers")
        _connect_workers(swarm, config, plan, work, stack)
        if web_ui is None:
            return _run_headless(swarm, config, plan, stop, say)
        if plan.start_users:
            # Serve the UI once the users run: a page opened before shows the start form.
            gevent.spawn(runner.start, config.users, config.spawn_rate)
            _wait_state(runner, lambda state: state != STATE_INIT, 30)
        web_ui.start()
        say(f"Locust web UI with the lab's tab: http://127.0.0.1:{plan.web_port}/?tab=lab")
        stop.wait()
        say("stopping the swarm")
    return None


def _drives_target(plan: SwarmPlan) -> bool:
    """Whether the swarm's users call a target's own tools (its mix was exported)."""
    return plan.target is not None and exported_mix() is not None


def _environment(config: LoadTestConfig, url: str, headless: bool, user_class: str) -> Environment:
    """Locust's environment for the swarm's users (of `user_class`), against `url`."""
    os.environ["LOADTEST_CONFIG"] = json.dumps(dataclasses.asdict(config))
    from loadtest.swarm import locustfile  # reads LOADTEST_CONFIG (the local runner's users)

    host = url.removesuffix("/mcp")
    locust_args = [
        "-f", str(LOCUSTFILE), "--host", host, "-u", str(config.locust_users),
        "-r", str(config.spawn_rate), *(["--headless"] if headless else []),
    ]  # fmt: skip
    options = get_parser(default_config_files=[]).parse_args(locust_args)
    # Locust's web UI parses sys.argv again on every page: give it Locust's arguments.
    sys.argv = [sys.argv[0], *locust_args]
    return Environment(
        user_classes=[getattr(locustfile, user_class)],
        events=locust.events,
        host=host,
        parsed_options=options,
        # Let calls in progress finish when the swarm stops, so they are not lost.
        stop_timeout=config.stop_timeout_s,
    )


def _web_ui(swarm: _Swarm, port: int, stack: contextlib.ExitStack) -> Any:
    """Locust's web UI with the lab's tab, not yet serving; stopped when the swarm ends."""
    web_ui = swarm.env.create_web_ui("127.0.0.1", port, delayed_start=True)
    tab.install(web_ui, swarm.control)
    serve_with_head_deadline(web_ui)  # a half-sent head is closed, not held for ever
    stack.callback(web_ui.stop)
    return web_ui


def _connect_workers(
    swarm: _Swarm, config: LoadTestConfig, plan: SwarmPlan, work: Path, stack: contextlib.ExitStack
) -> None:
    """Start the local workers and wait until every expected worker has connected; each
    is stopped, and told to quit, when the swarm ends."""
    procs = start_workers(config, plan.workers, "127.0.0.1", plan.master_port, work)
    stack.callback(stop_workers, procs)
    stack.callback(swarm.runner.quit)
    # First at the end: before the master quits.
    stack.callback(_quit_stopped_workers, swarm.runner, swarm.worker_ids)
    wait_for_workers(swarm.runner, plan.workers + plan.expect_workers, procs)
    runner = swarm.runner
    swarm.worker_ids += (
        list(runner.clients.keys()) if isinstance(runner, MasterRunner) else [LOCAL_WORKER]
    )


def _run_headless(
    swarm: _Swarm, config: LoadTestConfig, plan: SwarmPlan, stop: Event, say: Any
) -> dict[str, Any]:
    """Start the users, inject the fault on cue, stop after the duration; the summary."""
    runner = swarm.runner
    meter = _replica_meter(swarm.cluster) if plan.find_ceiling else None
    started = time.time()
    shape = shape_for(config, plan, lambda: started, lambda: _collector(swarm).calls)
    if plan.fault:
        gevent.spawn_later(config.fault_at_s, _inject_on_cue, swarm.control, plan.fault, say)
    if shape is None:
        runner.start(config.locust_users, config.spawn_rate)
        say(f"swarm: {_who(config)} for {config.duration_s:g} s")
        stop.wait(config.duration_s)
    else:
        say(f"swarm: {_who_shaped(config, plan)}")
        drive(runner, shape, stop)
    runner.stop()
    _wait_stopped(runner, swarm.env.stop_timeout + 30)
    ended = time.time()
    if meter is not None:
        with contextlib.suppress(OSError):  # a replica gone: the readings so far
            meter.stop(0)
    await_worker_reports(runner, swarm.worker_ids)
    calls = _collector(swarm)
    summary = summarize(
        config,
        calls.calls,
        swarm.control.events,
        swarm_started=started,
        swarm_ended=ended,
        versions=dict(swarm.cluster.versions) if swarm.cluster else {},
        locust_report=[e.to_dict() for e in runner.stats.entries.values()],
        per_replica=per_replica(REPLICA_COUNTS.by_replica()),
    )
    if plan.html_path is not None:
        write_html_report(swarm.env, plan.html_path)
    summary["target"] = plan.target
    mix = exported_mix() if _drives_target(plan) else None
    if mix is not None:  # the target's own tools, as discovered, and the eras spoken
        summary["arch"] = "target"  # its users speak the target's eras, not an architecture
        summary["target_server"] = mix.server_name
        summary["target_eras"] = list(mix.eras)
        summary["target_tools"] = mix.weights
    if plan.fault:  # the run's scenario is the fault injected on cue
        summary["scenario"] = plan.fault
    if plan.find_ceiling:
        steps, streams, stopped = 1, None, None
        if isinstance(shape, RateSteps):
            steps, streams = shape.last_step, shape.streams
            stopped = shape.last_step if shape.stopped_on_break else None
        search = ceiling_search(config, plan)
        readings = [ReplicaTime(*s) for s in meter.samples] if meter is not None else None
        summary.update(ceiling(search, calls.calls, started, steps, readings, streams, stopped))
    summary["workers"] = len(swarm.worker_ids)
    summary["per_worker"] = calls.completed_by_worker(swarm.worker_ids)
    return summary


def _replica_meter(cluster: Cluster | None) -> CpuMeter | None:
    """The lab's replicas' time (their CPU workers' too), read as the ceiling's steps run;
    None against a target, whose processes this machine cannot read."""
    if cluster is None:
        return None
    pids = [pid for r in cluster.replicas.values() if r.pid for pid in (r.pid, *children(r.pid))]
    meter = CpuMeter(pids, every_s=REPLICA_READ_EVERY_S)
    meter.start()
    return meter


def _collector(swarm: _Swarm) -> CallCollector:
    """The calls the master has received so far (none yet before the first)."""
    return getattr(swarm.env, "call_collector", None) or CallCollector()


def _who_shaped(config: LoadTestConfig, plan: SwarmPlan) -> str:
    """Who calls in a shaped run: its shape, or the ceiling's steps."""
    if plan.find_ceiling:
        first = ceiling_search(config, plan).rate_of(1)
        return (
            f"finding the ceiling: {first:g} calls/s, "
            f"+{config.rate_per_s:g} calls/s every {plan.step_s:g} s, "
            f"at most {plan.max_steps} steps, SLO p95 <= {plan.slo_p95_ms:g} ms"
        )
    if plan.shape == "spike":
        return (
            f"spike shape of {config.users} users, {plan.spike_users} from "
            f"{plan.spike_at_s:g} s for {plan.spike_s:g} s, for {config.duration_s:g} s"
        )
    return f"{plan.shape} shape up to {config.users} users for {config.duration_s:g} s"


def _who(config: LoadTestConfig) -> str:
    """Who calls: open-loop arrivals or closed-loop users."""
    if config.rate_per_s:
        return f"{config.rate_per_s:g} calls/s (open loop)"
    return f"{config.users} users"


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

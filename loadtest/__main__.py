"""Command line of the load test.

    python -m loadtest cluster up --replicas 3 --arch mrtr [--lb-port P]
    python -m loadtest scenario rolling-upgrade --arch mrtr --replicas 3 --users 20 \\
        --duration 20 --json out.json
    python -m loadtest compare [--scenario rolling-upgrade] [--json out.json]
    python -m loadtest swarm --arch sticky --workers 2   # Locust's web UI with the lab's tab
    python -m loadtest swarm --headless --users 8 --duration 25 --json out.json
    python -m loadtest bench [--json out.json]    # lab vs bare Starlette and the SDKs, with wrk
    python -m loadtest bench --state              # requestState seal + open vs raw AES-GCM
    python -m loadtest bench --held 200           # a waiting legacy call's memory, lab vs SDK
    python -m loadtest bench --instructions 200   # instructions per request live, lab vs bare
    python -m loadtest calibrate --arch mrtr [--json out.json]  # live vs labsim, 3 loads
    python -m loadtest calibrate --show a.json b.json   # stored reports as Markdown tables
    python -m loadtest measure --json labsim/measured.json  # the simulation's measured inputs
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from loadtest.config import (
    ARCHITECTURES,
    SCENARIOS,
    TASK_STORE_FSYNC,
    TASK_WIRES,
    LoadTestConfig,
    LoadTestError,
)
from loadtest.swarm.options import add_swarm_options
from loadtest.swarm.summary import print_table


def _terminate_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C, so `finally` blocks stop every process."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def _config(args: argparse.Namespace, **overrides: Any) -> LoadTestConfig:
    fields = {
        "arch": getattr(args, "arch", "mrtr"),
        "scenario": getattr(args, "scenario", "steady"),
        "replicas": args.replicas,
    }
    for name in (
        "users",
        "spawn_rate",
        "duration_s",
        "fault_at_s",
        "think_time_median_s",
        "drain_timeout_s",
        "task_wire",
        "task_store_fsync",
        "seed",
        "lb_idle_timeout_s",
    ):
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = value
    if getattr(args, "tools", None):
        fields["tool_mix"] = _tool_mix(args.tools)
    fields.update(overrides)
    return LoadTestConfig(**fields)


def _tool_mix(spec: str) -> dict[str, float]:
    """Parse `name=weight,name=weight` (a bare name weighs 1)."""
    mix = {}
    for item in spec.split(","):
        name, _, weight = item.strip().partition("=")
        try:
            mix[name] = float(weight) if weight else 1.0
        except ValueError as exc:
            raise LoadTestError(f"tool weight {weight!r} is not a number") from exc
    return mix


def cmd_cluster(args: argparse.Namespace) -> int:
    from loadtest.harness.cluster import Cluster

    config = _config(args)
    try:
        with Cluster(config, lb_port=args.lb_port) as cluster:
            print(f"{config.arch} cluster up: {cluster.url}")
            for name, replica in cluster.replicas.items():
                print(f"  {name}: {replica.base_url} (pid {replica.pid})")
            lb_pid = cluster.lb.pid if cluster.lb is not None else None
            print(f"  haproxy: 127.0.0.1:{cluster.lb_port} (pid {lb_pid})")
            if cluster.redis is not None:
                print(f"  redis: {cluster.redis.url} (pid {cluster.redis.pid})")
            print(f"  haproxy admin socket: {cluster.api.socket_path}")
            print("Ctrl-C stops everything.", flush=True)
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        print("stopped: every process of the cluster has exited")
    return 0


def cmd_scenario(args: argparse.Namespace) -> int:
    from loadtest.swarm.scenario_run import run_scenario

    summary = run_scenario(_config(args), html_path=_html_beside(args.json))
    _write(summary, args.json)
    print_table([summary])
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from loadtest.swarm.scenario_run import run_scenario

    summaries = [
        run_scenario(_config(args, arch=arch), html_path=_html_beside(args.json, arch))
        for arch in ARCHITECTURES
    ]
    _write(summaries, args.json)
    print_table(summaries)
    return 0


def cmd_swarm(args: argparse.Namespace) -> int:
    # Imported here: loadtest.swarm.runner loads Locust, which patches this process with gevent.
    from loadtest.swarm.runner import run_swarm, run_workers

    config = _config(args)
    if args.join:
        return run_workers(config, args.join, args.workers)
    summary = run_swarm(
        config,
        workers=args.workers,
        expect_workers=args.expect_workers,
        target=args.target,
        headless=args.headless,
        start_users=args.users is not None,
        web_port=args.web_port,
        master_bind=args.master_bind,
        master_port=args.master_port,
        html_path=_html_beside(args.json),
        fault=args.fault,
    )
    if summary is not None:
        _write(summary, args.json)
        print_table([summary])
        print("completed per worker: " + json.dumps(summary["per_worker"]))
    return 0


def cmd_soak(args: argparse.Namespace) -> int:
    from loadtest.swarm.soak import print_soak, run_soak

    report = run_soak(
        idle=args.idle,
        clients=args.clients,
        duration_s=args.duration_s,
        held_attempts=args.held,
        held_limit=args.held_limit,
    )
    _write(report.as_dict(), args.json)
    print_soak(report)
    return 0 if report.failed == 0 else 1


def cmd_bench(args: argparse.Namespace) -> int:
    from loadtest.bench.report import print_report
    from loadtest.bench.run import run_bench
    from loadtest.bench.targets import SERVERS

    chosen = tuple(args.servers.split(",")) if args.servers else None
    if args.held:
        from loadtest.bench.held_compare import compare_held, print_held

        report = compare_held(args.held)
        _write(report, args.json)
        print_held(report)
        return 0
    if args.instructions:
        from loadtest.bench.instructions import count_instructions, print_instructions

        counts = count_instructions(servers=chosen or ("bare", "lab"), requests=args.instructions)
        _write(counts, args.json)
        print_instructions(counts, args.instructions)
        return 0
    if args.state:
        from loadtest.bench.microbench import print_state_report, seal_open_microbench

        report = seal_open_microbench()
        _write(report, args.json)
        print_state_report(report)
        return 0
    report = run_bench(
        duration_s=args.duration_s,
        connections=args.connections,
        passes=args.passes,
        servers=chosen or SERVERS,
    )
    _write(report, args.json)
    print_report(report)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from loadtest.calibration.calibrate import run_calibration
    from loadtest.calibration.table import print_calibration, print_stored

    if args.show:
        print_stored(args.show)
        return 0
    report = run_calibration(
        args.arch,
        duration_s=args.duration_s,
        probe_s=args.probe_s,
        upgrade_s=args.upgrade_s,
        repeats=args.repeats,
    )
    _write(report, args.json)
    print_calibration(report)
    return 0


def cmd_measure(args: argparse.Namespace) -> int:
    from loadtest.calibration.measure import remeasure_held, run_measure

    if args.only == "held":
        if not args.json:
            raise SystemExit("measure --only held updates a parameter file: give it with --json")
        try:
            existing = json.loads(Path(args.json).read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise SystemExit(f"cannot read the parameter file {args.json}: {error}") from None
        document = remeasure_held(existing, held_calls=args.held_calls)
    else:
        document = run_measure(held_calls=args.held_calls, stretch_s=args.stretch_s)
    _write(document, args.json)
    print(json.dumps(document["values"], indent=2))
    return 0


def _html_beside(json_path: str | None, arch: str = "") -> Path | None:
    """Where Locust's HTML report goes: beside the summary (`out.json` -> `out.html`, or
    `out.mrtr.html` for one architecture of a comparison); nowhere without a summary."""
    if not json_path:
        return None
    return Path(json_path).with_suffix(f".{arch}.html" if arch else ".html")


def _write(document: Any, path: str | None) -> None:
    if path:
        Path(path).write_text(json.dumps(document, indent=2))
        print(f"wrote {path}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    cluster = sub.add_parser("cluster", help="start a cluster and keep it up until Ctrl-C")
    cluster.add_argument("action", choices=["up"])
    cluster.add_argument("--replicas", type=int, default=3)
    cluster.add_argument("--arch", choices=ARCHITECTURES, default="mrtr")
    cluster.add_argument("--lb-port", type=int, default=None)
    cluster.set_defaults(run=cmd_cluster)

    def swarm_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--replicas", type=int, default=3)
        p.add_argument("--users", type=int, default=None)
        p.add_argument("--duration", dest="duration_s", type=float, default=None)
        p.add_argument("--fault-at", dest="fault_at_s", type=float, default=None)
        p.add_argument("--think-time", dest="think_time_median_s", type=float, default=None)
        p.add_argument("--drain-timeout", dest="drain_timeout_s", type=float, default=None)
        p.add_argument("--tools", default=None, help="tool mix, e.g. link_accounts=3,crunch=1")
        p.add_argument("--task-wire", choices=TASK_WIRES, default=None, help="tasks' wire form")
        p.add_argument(
            "--task-store-fsync",
            choices=TASK_STORE_FSYNC,
            default=None,
            help="the task store's append-only file (off: a volatile store)",
        )
        p.add_argument(
            "--seed", type=int, default=None, help="seed of the fault's choice of replica"
        )
        p.add_argument(
            "--lb-idle-timeout",
            dest="lb_idle_timeout_s",
            type=float,
            default=None,
            help="idle-timeout: HAProxy's idle timeout, s (shorter than --think-time)",
        )
        p.add_argument(
            "--json", default=None, help="write the summary here, Locust's HTML report beside it"
        )

    scenario = sub.add_parser("scenario", help="run one scenario and summarise it")
    scenario.add_argument(
        "scenario",
        choices=SCENARIOS,
        help="steady; rolling-upgrade; crash (a replica chosen with --seed killed, restarted); "
        "overload; store-outage (Redis killed, restarted); idle-timeout (HAProxy cuts "
        "connections idle longer than --lb-idle-timeout, keep-alive comments off)",
    )
    scenario.add_argument("--arch", choices=ARCHITECTURES, default="mrtr")
    swarm_options(scenario)
    scenario.set_defaults(run=cmd_scenario)

    compare = sub.add_parser("compare", help="run a scenario for all three architectures")
    compare.add_argument("--scenario", choices=SCENARIOS, default="rolling-upgrade")
    swarm_options(compare)
    compare.set_defaults(run=cmd_compare)

    swarm = sub.add_parser(
        "swarm", help="a Locust swarm with the lab's tab in its web UI (or headless)"
    )
    add_swarm_options(swarm)
    swarm.set_defaults(run=cmd_swarm)
    bench = sub.add_parser("bench", help="the lab's server side by side with its peers")
    bench.add_argument("--duration", dest="duration_s", type=float, default=3.0)
    bench.add_argument("--passes", type=int, default=3, help="interleaved passes (median)")
    bench.add_argument("--connections", type=int, default=10)
    bench.add_argument(
        "--servers",
        default=None,
        help="a comma-separated subset of bare,lab,sdk,ts,ts-hmac; lab-mypyc adds the lab "
        "compiled by mypyc, floor a server that does only the state's work",
    )
    bench.add_argument(
        "--held",
        type=int,
        default=0,
        metavar="CALLS",
        help="only memory per waiting 2025-11-25 call, lab vs the Python SDK's server",
    )
    bench.add_argument("--state", action="store_true", help="only requestState vs raw AES-GCM")
    bench.add_argument(
        "--instructions", type=int, default=0, metavar="N", help="only instructions per request"
    )
    bench.add_argument("--json", default=None, help="write the report here")
    bench.set_defaults(run=cmd_bench)
    calibrate = sub.add_parser("calibrate", help="the simulation against the live cluster")
    calibrate.add_argument("--arch", choices=ARCHITECTURES, default="mrtr")
    calibrate.add_argument("--duration", dest="duration_s", type=float, default=15.0)
    calibrate.add_argument("--probe", dest="probe_s", type=float, default=15.0)
    calibrate.add_argument("--repeats", type=int, default=3,
                           help="runs of each level; judged by their median")  # fmt: skip
    calibrate.add_argument("--upgrade", dest="upgrade_s", type=float, default=16.0,
                           help="seconds of the rolling-upgrade run; 0 skips it")  # fmt: skip
    calibrate.add_argument("--json", default=None, help="write the report here")
    calibrate.add_argument("--show", nargs="+", metavar="F", default=None,
                           help="print stored reports as Markdown tables, run nothing")  # fmt: skip
    calibrate.set_defaults(run=cmd_calibrate)
    soak = sub.add_parser("soak", help="idle sockets beside a swarm: is every call served?")
    soak.add_argument("--idle", type=int, default=1100, help="sockets that never send")
    soak.add_argument("--clients", type=int, default=8)
    soak.add_argument("--duration", dest="duration_s", type=float, default=10.0)
    soak.add_argument(
        "--held", type=int, default=200, help="legacy calls one principal then tries to hold"
    )
    soak.add_argument(
        "--held-limit", type=int, default=20, help="the replica's held calls per principal"
    )
    soak.add_argument("--json", default=None, help="write the report here")
    soak.set_defaults(run=cmd_soak)
    measure = sub.add_parser("measure", help="measure the simulation's inputs on live replicas")
    measure.add_argument("--held-calls", type=int, default=200, help="legacy calls held at once")
    measure.add_argument("--stretch", dest="stretch_s", type=float, default=5.0, help="seconds")
    measure.add_argument("--json", default=None, help="write the parameter file here")
    measure.add_argument(
        "--only",
        choices=["held"],
        default=None,
        help="measure only the memory of a held call again, in the --json file, keeping the rest",
    )
    measure.set_defaults(run=cmd_measure)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _terminate_on_sigterm()
    try:
        return args.run(args)
    except LoadTestError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

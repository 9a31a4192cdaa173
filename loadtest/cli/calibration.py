"""The commands that set the simulation beside the live cluster: calibrate and measure.

calibrate  the live cluster and its simulated twin at three loads and an upgrade
measure    the simulation's measured inputs, on live replicas
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
from pathlib import Path
from typing import Any

from loadtest.calibration.remeasure import PARTS
from loadtest.calibration.run import LEVEL_S
from loadtest.cli.options import add_json_option, command_options, run_settings, write_json
from loadtest.config import LoadTestConfig, LoadTestError
from server.flags import add_flags


def add_commands(commands: Any) -> None:
    """calibrate and measure."""
    _add_calibrate(commands)
    _add_measure(commands)


def _add_calibrate(commands: Any) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        help="the simulation against the live cluster",
        description="The live cluster beside its simulated twin: a probe, the spread of a "
        "replica's service time, three load levels of --duration seconds each, run --repeats "
        "times, and a rolling upgrade.",
    )
    # Each load level runs for --duration seconds, with the calibration's own default.
    add_flags(
        run_settings(calibrate),
        LoadTestConfig,
        only=("arch", "duration_s"),
        defaults={"duration_s": LEVEL_S},
    )
    options = command_options(calibrate)
    options.add_argument(
        "--probe",
        dest="probe_s",
        type=float,
        default=15.0,
        help="seconds of the low-load probe, and of the service-spread run (default: %(default)s)",
    )
    options.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="runs of each level; judged by their median (default: %(default)s)",
    )
    options.add_argument(
        "--upgrade",
        dest="upgrade_s",
        type=float,
        default=16.0,
        help="seconds of the rolling-upgrade run; 0 skips it (default: %(default)s)",
    )
    add_json_option(options, "write the report here")
    options.add_argument(
        "--show",
        nargs="+",
        metavar="F",
        default=None,
        help="print stored reports as Markdown tables, run nothing",
    )
    calibrate.set_defaults(run=run_calibrate)


def _add_measure(commands: Any) -> None:
    measure = commands.add_parser(
        "measure",
        help="measure the simulation's inputs on live replicas, or one tool of any MCP server",
        description="Without --target: the lab's own replicas (every architecture), as "
        "labsim/measured.json holds them. With --target URL --tool NAME: one tool of any MCP "
        "server, in each protocol era it speaks (or the one --era names), with arguments "
        "drawn from the tool's inputSchema or a --workload file and every question answered "
        "validly from its own schema: the service time of a round (mean, spread, "
        "the kind that fits), bytes per round and, where its memory can be seen (--pid, or "
        "its /metrics), its idle memory and what a held legacy call adds. The output is a "
        "parameter file for labsim plan --params.",
    )
    options = command_options(measure)
    options.add_argument(
        "--target",
        metavar="URL",
        default=None,
        help="the MCP endpoint of the server to measure (e.g. http://127.0.0.1:8000/mcp) "
        "instead of the lab's own replicas",
    )
    options.add_argument(
        "--tool", default=None, help="with --target: the tool to measure (required)"
    )
    options.add_argument(
        "--arguments",
        metavar="JSON",
        default=None,
        help="with --target: the tool's arguments, a JSON object, or @FILE to read it from "
        "a file (arguments too large for a command line) (default: drawn from the tool's "
        "inputSchema, call after call)",
    )
    options.add_argument(
        "--era",
        choices=("2026-07-28", "2025-11-25", "both"),
        default="both",
        help="with --target: the protocol era to measure; both: each the server speaks, "
        "one's figures kept when the other fails (default: %(default)s)",
    )
    options.add_argument(
        "--workload",
        metavar="FILE",
        default=None,
        help="with --target: a workload file (TOML): per tool, its arguments (fixed, a list "
        'cycled, {sample = [...]}, {generate = "schema"}), its answers by question or by '
        "field, shares of decline and cancel; sampling and roots answers (default: none)",
    )
    options.add_argument(
        "--tokens-file",
        metavar="FILE",
        default=None,
        help="with --target: bearer tokens, one a line, one per simulated user (default: none)",
    )
    options.add_argument(
        "--token",
        action="append",
        default=None,
        help="with --target: a bearer token for the server; repeatable: the held calls go "
        "round them, for a server that caps what one principal holds (default: anonymous)",
    )
    options.add_argument(
        "--pid",
        type=int,
        default=None,
        help="with --target: the server's process on this machine, whose CPU and memory "
        "are then read from /proc (default: none; memory from its /metrics if it has them)",
    )
    options.add_argument(
        "--calls",
        type=int,
        default=200,
        help="with --target: calls of the tool timed in each era (default: %(default)s)",
    )
    options.add_argument(
        "--requests-per-s",
        type=float,
        default=50.0,
        help="with --target: most requests a second sent (under a per-principal rate "
        "limit; one at a time either way) (default: %(default)s)",
    )
    options.add_argument(
        "--held-calls",
        type=int,
        default=200,
        help="legacy calls held at once (default: %(default)s)",
    )
    options.add_argument(
        "--stretch",
        dest="stretch_s",
        type=float,
        default=5.0,
        help="seconds of each stretch the replica's CPU is read over (default: %(default)s)",
    )
    add_json_option(options, "write the parameter file here")
    options.add_argument(
        "--only",
        choices=PARTS,
        default=None,
        help="measure only this again, in the --json file, keeping the rest: the memory of a "
        "held call (held), a round's service time (round), an idle replica's memory (memory)",
    )
    measure.set_defaults(run=run_measure)


def run_calibrate(args: argparse.Namespace) -> int:
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
    write_json(report, args.json)
    print_calibration(report)
    return 0


def run_measure(args: argparse.Namespace) -> int:
    from loadtest.calibration.measure import run_measure
    from loadtest.calibration.remeasure import remeasure

    if args.target:
        return _measure_target(args)
    if args.only:
        if not args.json:
            raise SystemExit(
                f"measure --only {args.only} updates a parameter file: give it with --json"
            )
        try:
            existing = json.loads(Path(args.json).read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise SystemExit(f"cannot read the parameter file {args.json}: {error}") from None
        document = remeasure(
            existing, args.only, held_calls=args.held_calls, stretch_s=args.stretch_s
        )
    else:
        document = run_measure(held_calls=args.held_calls, stretch_s=args.stretch_s)
    write_json(document, args.json)
    print(json.dumps(document["values"], indent=2))
    return 0


def _measure_target(args: argparse.Namespace) -> int:
    import httpx

    from loadtest.calibration.target import measure_target
    from loadtest.target import (
        Auth,
        TargetError,
        ToolArguments,
        ToolWorkload,
        answers_for,
        check_workload,
        discover,
        read_workload,
    )
    from server.client import McpError

    if not args.tool:
        raise LoadTestError("measure --target needs --tool NAME")
    fixed = _arguments(args.arguments) if args.arguments is not None else None
    command = "python -m loadtest " + shlex.join(sys.argv[1:]) if sys.argv[1:] else ""
    try:
        workload = read_workload(args.workload) if args.workload else None
        target = discover(args.target, Auth.from_options(args.token, args.tokens_file))
        tool = target.tool(args.tool)
        if workload is not None:
            check_workload(workload, target)
        table = workload.for_tool(args.tool) if workload is not None else ToolWorkload()
        drawn = ToolArguments(tool, table, random.Random(0))
        document = measure_target(
            target,
            args.tool,
            (lambda: dict(fixed)) if fixed is not None else drawn.next,
            era=args.era,
            answer=answers_for(args.tool, workload),
            pid=args.pid,
            calls=args.calls,
            held_calls=args.held_calls,
            requests_per_s=args.requests_per_s,
            command=command,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except (TargetError, ValueError) as error:
        raise LoadTestError(str(error)) from None
    except (httpx.HTTPError, McpError) as error:
        # A server that stalls or answers what is no MCP reply: its fault, said in one line.
        raise LoadTestError(
            f"{args.target} failed the measurement: {type(error).__name__}: {error}"
        ) from None
    write_json(document, args.json)
    print(json.dumps({k: document[k] for k in ("values", "round_cpu", "tools")}, indent=2))
    return 0


def _arguments(text: str) -> dict[str, Any]:
    """`--arguments`: a JSON object, or @FILE holding one."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text()
        except OSError as error:
            raise LoadTestError(f"--arguments {text}: {error.strerror}") from None
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as error:
        raise LoadTestError(f"--arguments is not JSON: {error}") from None
    if not isinstance(arguments, dict):
        raise LoadTestError("--arguments must be a JSON object")
    return arguments

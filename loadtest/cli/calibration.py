"""The commands that set the simulation beside the live cluster: calibrate and measure.

calibrate  the live cluster and its simulated twin at three loads and an upgrade
measure    the simulation's measured inputs, on live replicas
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from loadtest.cli.options import add_json_option, command_options, run_settings, write_json
from loadtest.config import LoadTestConfig
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
        defaults={"duration_s": 15.0},
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
        "measure", help="measure the simulation's inputs on live replicas"
    )
    options = command_options(measure)
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
        choices=["held"],
        default=None,
        help="measure only the memory of a held call again, in the --json file, keeping the rest",
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
    write_json(document, args.json)
    print(json.dumps(document["values"], indent=2))
    return 0

"""The command that checks a plan live: verify-plan.

verify-plan  a plan of `python -m labsim plan --json P`, run live at its fleet and one
             fewer for each architecture: did each verdict hold?
"""

from __future__ import annotations

import argparse
from typing import Any

from loadtest.cli.options import add_json_option, command_options, write_json
from loadtest.config import ARCHITECTURES
from loadtest.verify.hosting import Hosting
from server.flags import add_flags, values_from_flags

#: Exit statuses: every verdict held; one did not; the runs could not be judged.
HELD, NOT_HELD, NOT_JUDGED = 0, 1, 3


def add_commands(commands: Any) -> None:
    """verify-plan."""
    verify = commands.add_parser(
        "verify-plan",
        help="check a plan's verdicts on the live cluster",
        description="A plan (python -m labsim plan ... --json P) run live: for each "
        "architecture its workload (open-loop arrivals at the plan's rate, its think time, "
        "tool mix, users who never answer, round work and connection limit) at the plan's "
        "fleet and one replica fewer, judged as the plan judged its simulation. Exit status "
        "0: every verdict held; 1: one did not; 3: not judged (a replica starved of CPU, or "
        "a plan this machine cannot host).",
    )
    options = command_options(verify)
    options.add_argument("plan", metavar="P", help="the plan's JSON file")
    options.add_argument(
        "--arch",
        action="append",
        choices=ARCHITECTURES,
        default=None,
        help="check only this architecture; repeatable (default: every one the plan answers)",
    )
    options.add_argument(
        "--duration",
        dest="judged_s",
        type=float,
        default=30.0,
        help="seconds of each live run that are judged, after its warm-up (default: %(default)s)",
    )
    options.add_argument(
        "--warmup",
        dest="warmup_s",
        type=float,
        default=None,
        help="seconds of each run before its calls are judged (default: 5, plus the plan's "
        "answer timeout when some users never answer)",
    )
    add_flags(options, Hosting)
    add_json_option(options, "write the verification here")
    verify.set_defaults(run=run_verify_plan)


def run_verify_plan(args: argparse.Namespace) -> int:
    from loadtest.verify.check import verify_plan
    from loadtest.verify.plan_file import read_plan
    from loadtest.verify.report import print_verification

    plan = read_plan(args.plan)
    document = verify_plan(
        plan,
        source=str(args.plan),
        archs=list(dict.fromkeys(args.arch)) if args.arch else None,
        judged_s=args.judged_s,
        warmup=args.warmup_s,
        hosting=Hosting(**values_from_flags(Hosting, args)),
    )
    write_json(document, args.json)
    print_verification(document)
    if not document["judged"]:
        return NOT_JUDGED
    held = all(
        entry["verdict_held"]
        for entry in document["architectures"].values()
        if entry.get("planned", True)
    )
    return HELD if held else NOT_HELD

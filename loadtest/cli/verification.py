"""The command that checks a plan live: verify-plan.

verify-plan  a plan of `python -m labsim plan --json P`, run live at its fleet and one
             fewer for each architecture: did each verdict hold?
             With --target URL --replicas N, against a deployment instead.
"""

from __future__ import annotations

import argparse
from typing import Any

from loadtest.cli.options import add_json_option, command_options, write_json
from loadtest.config import ARCHITECTURES
from loadtest.verify.hosting import Hosting
from loadtest.verify.target_settings import TargetSettings
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
        "a plan this machine cannot host). With --target URL --replicas N: the plan's "
        "workload, its tools under their own names, run against a deployment the lab did "
        "not start, judged the same way, with what the lab cannot see of its replicas said.",
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
    add_flags(options, TargetSettings)  # against a deployment the lab did not start
    add_json_option(options, "write the verification here")
    verify.set_defaults(run=run_verify_plan)


def run_verify_plan(args: argparse.Namespace) -> int:
    from loadtest.verify.check import verify_plan
    from loadtest.verify.plan_file import read_plan
    from loadtest.verify.report import print_verification

    plan = read_plan(args.plan)
    if args.target:
        document = _verify_deployment(plan, args)
        write_json(document, args.json)
        print_verification(document)
        return _status(document)
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
    return _status(document)


def _verify_deployment(plan: Any, args: argparse.Namespace) -> dict[str, Any]:
    """verify-plan --target: the plan's architecture (--arch, else mrtr where the plan
    answers it) checked against the deployment, and one replica fewer when given."""
    from loadtest.config import LoadTestError
    from loadtest.verify.deployment import Deployment, verify_deployment

    aim = TargetSettings(**values_from_flags(TargetSettings, args))
    if aim.replicas is None:
        raise LoadTestError("--target needs --replicas N: the deployment's size")
    archs = list(dict.fromkeys(args.arch or []))
    if len(archs) > 1:
        raise LoadTestError("--target checks one architecture: give --arch once")
    arch = archs[0] if archs else ("mrtr" if "mrtr" in plan.architectures else "")
    arch = arch or next(iter(plan.architectures))
    auth = {"token": aim.token, "tokens_file": aim.tokens_file, "workload": aim.workload}
    at_n = Deployment(str(aim.target), aim.replicas, aim.metrics_urls, **auth)
    fewer = None
    if aim.target_one_fewer:
        fewer = Deployment(aim.target_one_fewer, aim.replicas - 1, (), **auth)
    return verify_deployment(
        plan,
        arch,
        at_n,
        fewer,
        source=str(args.plan),
        judged_s=args.judged_s,
        warmup=args.warmup_s,
        hosting=Hosting(**values_from_flags(Hosting, args)),
    )


def _status(document: dict[str, Any]) -> int:
    """The exit status of a verification document."""
    if not document["judged"]:
        return NOT_JUDGED
    held = all(
        entry["verdict_held"]
        for entry in document["architectures"].values()
        if entry.get("planned", True)
    )
    return HELD if held else NOT_HELD

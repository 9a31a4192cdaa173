"""The command that examines a deployment: doctor.

doctor  a multi-replica MCP deployment (its replicas and/or its balancer) checked for
        what MRTR needs, each check passed or failed with its evidence and the fix.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from loadtest.cli.options import add_json_option, command_options, write_json
from loadtest.doctor.settings import Examination
from server.flags import add_flags, values_from_flags

#: Exit statuses: the deployment is ready for MRTR; it is not.
READY, NOT_READY = 0, 1
#: The principals whose tokens the doctor mints with a lab deployment's secret.
DOCTOR_PRINCIPALS = ("doctor-first-caller", "doctor-second-caller")


def add_commands(commands: Any) -> None:
    """doctor."""
    doctor = commands.add_parser(
        "doctor",
        help="check a deployment is ready for MRTR",
        description="A multi-replica MCP deployment checked from outside: requestState "
        "sealed by one replica opens on every other and through the balancer (and, when "
        "not, why), bound to its caller and alive for the think time; server/discover, "
        "Mcp-Method/Mcp-Name through the balancer; for 2025-11-25, the balancer's affinity "
        "and how long it lets an idle stream live; the limits a caller meets. Exit status "
        "0: ready for MRTR; 1: not ready (the failed checks are printed first).",
    )
    options = command_options(doctor)
    options.add_argument(
        "urls",
        metavar="URL",
        nargs="*",
        help="each replica's MCP endpoint (every ordered pair is checked); a lone URL is "
        "the way in, a balancer or one replica; none when --balancer is the only one",
    )
    options.add_argument(
        "--token",
        action="append",
        default=None,
        help="a bearer token for the deployment; give two principals' tokens (twice) to "
        "check that one's state is refused to the other (default: none, or with "
        "MRTR_JWT_SECRET set, as for a lab deployment, two principals' tokens minted with it)",
    )
    options.add_argument(
        "--workload",
        default=None,
        metavar="FILE",
        help="a workload file (TOML, as swarm --workload reads): the arguments and answers "
        "it states for the tool the doctor calls (default: all drawn from its schemas)",
    )
    add_flags(options, Examination)
    add_json_option(options, "write {ready, checks: [{name, passed, evidence, fix, figures}]} here")
    doctor.set_defaults(run=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    from loadtest.config import LoadTestError
    from loadtest.doctor import diagnose
    from loadtest.target import Auth, TargetError, read_workload
    from server.harness.principals import user_token

    # Without a token, a lab deployment's callers mint theirs with its secret: two
    # principals, so that one's state is tried by the other.
    secret = os.environ.get("MRTR_JWT_SECRET")
    tokens = args.token or (
        [user_token(secret, name) for name in DOCTOR_PRINCIPALS] if secret else None
    )
    if not args.urls and not args.balancer:
        raise LoadTestError("doctor needs a URL: each replica's, or the balancer's (--balancer)")
    try:
        report = diagnose(
            list(args.urls),
            Auth.from_options(tokens, None),
            Examination(**values_from_flags(Examination, args)),
            read_workload(args.workload) if args.workload else None,
        )
    except TargetError as error:
        raise LoadTestError(str(error)) from None
    write_json(report.to_json(), args.json)
    print(report.text())
    return READY if report.ready else NOT_READY

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
    python -m loadtest verify-plan plan.json [--arch A] [--duration S] [--json out.json]
    python -m loadtest verify-plan plan.json --target URL --replicas N  # against a deployment
    python -m loadtest doctor URL [URL ...] [--balancer URL] [--json out.json]  # MRTR-ready?
"""

from __future__ import annotations

import sys

# A swarm runs Locust's master (or its workers, with --join) in this process, and importing
# Locust patches the standard library with gevent. gevent asks for that before ssl loads;
# the commands' modules load it (httpx, PyJWT), and patched after them gevent warns that
# their references to ssl's classes were left unpatched. So a swarm loads Locust first.
if sys.argv[1:2] == ["swarm"]:
    import locust  # noqa: F401  # isort: split

import argparse
import signal
from typing import Any

from loadtest.cli import bench, calibration, diagnosis, runs, verification
from loadtest.config import LoadTestError


def build_parser() -> argparse.ArgumentParser:
    """Every command, family by family (`loadtest.cli`)."""
    parser = argparse.ArgumentParser(prog="python -m loadtest", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    runs.add_commands(commands)
    bench.add_commands(commands)
    calibration.add_commands(commands)
    verification.add_commands(commands)
    diagnosis.add_commands(commands)
    return parser


def _terminate_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C, so `finally` blocks stop every process."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _terminate_on_sigterm()
    try:
        code: int = args.run(args)
    except LoadTestError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())

"""Command line: compare the architectures, check the simulation against theory, time it,
right-size a fleet.

    python -m labsim compare [--scenario NAME] [--replications N] [--json FILE] [--plots DIR]
    python -m labsim mmc --arrival-rate L --service-rate M --servers C --calls N --seed S --json
    python -m labsim validate [--replications N] [--scale X]
    python -m labsim bench [--horizon-s S] [--repeats N] [--no-plan]
    python -m labsim plan [--rate R] [--think-time-median-s S] [--slo-p95-ms MS] ...
    python -m labsim scenarios

Every option's help shows its default (`python -m labsim COMMAND --help`). Bad
parameters print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from labsim.cli import bench, compare, plan, scenarios, theory
from labsim.cli.options import Parser
from labsim.model.checks import ParameterError

#: The commands, in the order `--help` lists them.
COMMANDS = (compare, theory, bench, plan, scenarios)


def parser() -> argparse.ArgumentParser:
    """The `python -m labsim` argument parser: one sub-command per command module."""
    main = Parser(prog="labsim", description=__doc__.split("\n\n")[0].replace("\n", " "))
    commands = main.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.add_to(commands)
    return main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; bad parameters are one line on stderr and status 2."""
    args = parser().parse_args(argv)
    # The command as typed, for a result that records what made it (`plan --json`).
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        status: int = args.run(args)
    except ParameterError as error:
        print(f"labsim {args.command}: error: {error}", file=sys.stderr)
        return 2
    return status

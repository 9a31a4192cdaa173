"""`labsim scenarios`: the named scenarios, one line each."""

from __future__ import annotations

import argparse

from labsim.cli.options import add_command
from labsim.study import scenarios


def add_to(commands: argparse._SubParsersAction) -> None:
    """The `scenarios` command (it has no options)."""
    add_command(commands, "scenarios", "list the named scenarios").set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print each scenario's name and what happens in it."""
    width = max(map(len, scenarios.SCENARIOS))
    for name in scenarios.SCENARIOS:
        print(f"{name:{width}s}  {scenarios.describe(name)}")
    return 0

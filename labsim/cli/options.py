"""What the commands share: a parser that fails in one line, help that shows the defaults,
and parameter overrides from a measured file and `--set NAME=VALUE`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from labsim.model import measured
from labsim.model.checks import ParameterError, number_or_text

PARAMS_HELP = (
    "parameter file written by `python -m loadtest measure` (default: labsim/measured.json, "
    "the lab's own server)"
)
SET_HELP = (
    "set any parameter, by section.field (cluster.connection_limit=64, "
    "client.max_retries=8, workload.round_cpu.mean_s=0.002) or by field name alone "
    "(replicas=8); repeatable, applied after --params"
)
PROCESSES_HELP = "worker processes for the runs (default: every core)"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class HelpWithDefaults(argparse.HelpFormatter):
    """Each option's help ends with its default, when it has one worth showing.

    A default of None means the help says what happens instead (`--processes`: every
    core); a switch's default is its absence.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        shown = (
            action.option_strings
            and "default" not in text
            and default not in (None, argparse.SUPPRESS)
            and not isinstance(default, bool)
            and default != []
        )
        return f"{text} (default: %(default)s)" if shown else text


def add_command(
    commands: argparse._SubParsersAction, name: str, help: str
) -> argparse.ArgumentParser:
    """A sub-command whose --help shows every option's default."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=help, description=help, formatter_class=HelpWithDefaults
    )
    return parser


def overrides(pairs: Sequence[str], params_file: str | None = None) -> dict[str, Any]:
    """Every figure of `params_file` (if any), then each `--set path=value` on top, as
    settings by path (`SimParams.with_settings`)."""
    found: dict[str, Any] = {}
    if params_file:
        found.update(measured.load(params_file).overrides())
    found.update(set_pairs(pairs))
    return found


def set_pairs(pairs: Sequence[str]) -> dict[str, Any]:
    """`--set path=value` pairs as settings by path, each value a number where it reads as one."""
    found: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ParameterError(f"--set expects name=value, got {pair!r}")
        found[name.strip()] = number_or_text(value.strip())
    return found

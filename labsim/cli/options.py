"""What the commands share: a parser that fails in one line, help that shows the defaults,
and parameter overrides from a measured file and `--set NAME=VALUE`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from labsim.model import measured
from labsim.model.checks import ParameterError, number_or_text
from labsim.model.demand import (
    ServiceTime,
    WorkloadParams,
    split_round,
    stated_round,
)
from labsim.study.plan_request import STATED_ROUND, PlanRequest
from server.flags import add_flags

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


def add_round_options(parser: argparse.ArgumentParser) -> None:
    """`--round-cpu-ms`, `--round-cpu-cv`, `--round-cpu-kind`: the server's whole work per
    round (request overhead and tool) as a distribution the user states, declared once with
    the plan's request (`PlanRequest`)."""
    measured = "the lab's measured round's"
    shown = {"round_cpu_ms": "the scenario's", "round_cpu_cv": measured, "round_cpu_kind": measured}
    add_flags(parser, PlanRequest, only=STATED_ROUND, shown=shown)


def round_overrides(args: argparse.Namespace, changes: dict[str, Any]) -> dict[str, Any]:
    """The settings `--round-cpu-*` make (none without them): the stated round split into
    the request's overhead and the tool's work, as a parameter file's round is."""
    if args.round_cpu_ms is None:
        if args.round_cpu_cv is not None or args.round_cpu_kind is not None:
            raise ParameterError("--round-cpu-cv and --round-cpu-kind need --round-cpu-ms")
        return {}
    if not args.round_cpu_ms > 0:
        raise ParameterError(f"--round-cpu-ms must be > 0, got {args.round_cpu_ms!r}")
    lab = measured.load().round_cpu or ServiceTime(kind="deterministic", cv=0.0)
    whole = stated_round(lab, args.round_cpu_ms, args.round_cpu_cv, args.round_cpu_kind)
    overhead_s = changes.get("request_overhead_s", WorkloadParams().request_overhead_s)
    tool, overhead_s = split_round(whole, float(overhead_s))
    return {"workload.round_cpu": tool, "request_overhead_s": overhead_s}

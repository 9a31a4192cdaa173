"""`labsim plan`: the smallest fleet of each architecture that meets the SLO, priced per month.

The command's flags are made from the fields of `PlanRequest`: one flag per field, with
the field's default and help, under the field's name unless the field names another.
`--tool-mix` sets two fields, the tools and their shares. The other options say where
the inputs come from (`--params`, `--set`), how the command runs and where it writes
(`COMMAND_ONLY`); they set nothing of the question.

It prints every figure the plan rests on, grouped by where it comes from (measured,
stated, assumed, the lab's configuration), any note (a shape rounded up, an architecture
no fleet serves and why, a marginal verdict), then the table. The exit status is 0 when
every architecture has a fleet, 1 when one has none, 2 for a bad flag.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import time
from pathlib import Path
from typing import Any

from labsim.cli.options import PARAMS_HELP, PROCESSES_HELP, SET_HELP, add_command, set_pairs
from labsim.cli.progress import announce
from labsim.model import measured
from labsim.study.capacity import plan
from labsim.study.plan_inputs import plan_inputs
from labsim.study.plan_report import inputs_text, table
from labsim.study.plan_request import PlanRequest
from server.flags import add_flags, flags_of, values_from_flags

#: Options of `plan` that set no field of the request, and what each does instead.
COMMAND_ONLY = {
    "processes": PROCESSES_HELP,
    "json": "also write the plan as JSON here (read by `python -m loadtest verify-plan`)",
    "plot": "also draw each constraint's use of its limit at N and N-1 here (PNG, SVG, PDF)",
    "params": PARAMS_HELP,
    "set": SET_HELP,
}


class _Stated(argparse.Action):
    """Store a flag's value and note that the architect stated it (the plan prints which
    figures were stated and which are assumptions)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        namespace.stated = {*getattr(namespace, "stated", set()), self.dest}


def request_flags() -> dict[str, tuple[str, ...]]:
    """Each flag of `plan` that sets the request, and the `PlanRequest` fields it sets."""
    flags: dict[str, tuple[str, ...]] = {}
    for name, flag in flags_of(PlanRequest).items():
        flags[flag] = (*flags.get(flag, ()), name)
    return flags


def add_to(commands: argparse._SubParsersAction) -> None:
    """The `plan` command: a flag per request field, then the command's own options."""
    planning = add_command(commands, "plan", "right-size each architecture, with its bill")
    measured_round = plan_inputs().measured_round
    from_file = {
        "round_cpu_ms": f"{measured_round.mean_s * 1e3:.4g}",
        "round_cpu_cv": f"{measured_round.cv:g}",
        "round_cpu_kind": measured_round.kind,
    }
    shown = {
        name: f"the parameter file's round; the lab's: {figure}"
        for name, figure in from_file.items()
    }
    add_flags(planning, PlanRequest, action=_Stated, shown=shown)
    planning.add_argument("--params", metavar="FILE", help=COMMAND_ONLY["params"])
    planning.add_argument(
        "--set", action="append", default=[], metavar="PATH=VALUE", help=COMMAND_ONLY["set"]
    )
    planning.add_argument("--processes", type=int, default=None, help=COMMAND_ONLY["processes"])
    planning.add_argument("--json", metavar="FILE", help=COMMAND_ONLY["json"])
    planning.add_argument("--plot", metavar="FILE", help=COMMAND_ONLY["plot"])
    planning.set_defaults(run=run, stated=set())


def request_from(args: argparse.Namespace) -> PlanRequest:
    """The architect's question as the `plan` flags put it."""
    return PlanRequest(**values_from_flags(PlanRequest, args))


def stated_fields(args: argparse.Namespace) -> set[str]:
    """The request fields the command line stated (a flag given, even at its default)."""
    flags = request_flags()
    return {
        name for dest in args.stated for name in flags.get("--" + dest.replace("_", "-"), (dest,))
    }


def run(args: argparse.Namespace) -> int:
    """Plan every architecture, print what it rests on and the table, write what was asked."""
    started = time.perf_counter()
    request = request_from(args)
    measurement = measured.load(args.params) if args.params else None
    plan_input = plan_inputs(measurement, set_pairs(args.set))
    announce(
        "plan",
        "each architecture's latency floor, then fleets of growing size until each meets "
        f"the SLO: {request.replications} runs a size (up to {request.max_replications} "
        "where the verdict is close), one bar a step",
    )
    answer = plan(
        request,
        plan_input,
        processes=args.processes,
        progress=True,
        stated=stated_fields(args),
    )
    command = "python -m labsim " + shlex.join(getattr(args, "argv", ["plan"]))
    print(inputs_text(list(answer.inputs)))
    for note in answer.notes:
        print(f"note: {note}")
    print()
    print(table(answer))
    elapsed_s = time.perf_counter() - started
    print(f"\nelapsed: {elapsed_s:.1f} s")
    answer = dataclasses.replace(answer, command=command, elapsed_s=elapsed_s)
    if args.json:
        Path(args.json).write_text(json.dumps(answer.to_json(), indent=2) + "\n")
    if args.plot:
        from labsim.study.plots.plan import plan_uses  # matplotlib loads only when asked

        plan_uses(answer).savefig(args.plot, dpi=120)
    every = all(a.replicas is not None for a in answer.architectures.values())
    return 0 if every else 1

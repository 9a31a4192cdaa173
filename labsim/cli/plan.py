"""`labsim plan`: the smallest fleet of each architecture that meets the SLO, priced per month.

The command's flags are made from the fields of `PlanRequest`: one flag per field, with
the field's default and help, under the field's name unless the field names another.
`--tool-mix` sets two fields, the tools and their shares. The other options say how the
command runs and where it writes (`COMMAND_ONLY`); they set nothing of the question.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labsim.cli.options import PARAMS_HELP, PROCESSES_HELP, add_command, overrides
from labsim.model.params import SimParams
from labsim.study.capacity import plan, plan_table
from labsim.study.plan_request import PlanRequest, parse_tool_mix, tool_mix_text

#: Options of `plan` that set no field of the request, and what each does instead.
COMMAND_ONLY = {
    "processes": PROCESSES_HELP,
    "json": "also write the plan as JSON here",
    "params": PARAMS_HELP,
}

#: Flags that set several fields at once: how their text becomes the fields' values, and
#: how the fields' defaults are written as that text.
_SHARED_FLAGS: dict[str, tuple[Callable[[str], dict[str, Any]], Callable[..., str]]] = {
    "--tool-mix": (parse_tool_mix, tool_mix_text),
}


def request_flags() -> dict[str, tuple[str, ...]]:
    """Each flag of `plan` that sets the request, and the `PlanRequest` fields it sets."""
    flags: dict[str, tuple[str, ...]] = {}
    for field in dataclasses.fields(PlanRequest):
        flag = field.metadata.get("flag", "--" + field.name.replace("_", "-"))
        flags[flag] = (*flags.get(flag, ()), field.name)
    return flags


def add_to(commands: argparse._SubParsersAction) -> None:
    """The `plan` command: a flag per request field, then the command's own options."""
    planning = add_command(commands, "plan", "right-size each architecture, with its bill")
    defaults = PlanRequest()
    helps = {field.name: field.metadata["help"] for field in dataclasses.fields(PlanRequest)}
    for flag, names in request_flags().items():
        dest = flag.removeprefix("--").replace("-", "_")
        if len(names) == 1:
            default = getattr(defaults, names[0])
            planning.add_argument(
                flag, dest=dest, type=type(default), default=default, help=helps[names[0]]
            )
        else:
            # A flag of several fields has its own way from text to values (a KeyError here
            # is a new shared flag without one).
            _, as_text = _SHARED_FLAGS[flag]
            default_text = as_text(*(getattr(defaults, name) for name in names))
            planning.add_argument(flag, dest=dest, default=default_text, help=helps[names[0]])
    planning.add_argument("--processes", type=int, default=None, help=COMMAND_ONLY["processes"])
    planning.add_argument("--json", metavar="FILE", help=COMMAND_ONLY["json"])
    planning.add_argument("--params", metavar="FILE", help=COMMAND_ONLY["params"])
    planning.set_defaults(run=run)


def request_from(args: argparse.Namespace) -> PlanRequest:
    """The architect's question as the `plan` flags put it."""
    values: dict[str, Any] = {}
    for flag, names in request_flags().items():
        given = getattr(args, flag.removeprefix("--").replace("-", "_"))
        if len(names) == 1:
            values[names[0]] = given
        else:
            parse, _ = _SHARED_FLAGS[flag]
            values.update(parse(given))
    return PlanRequest(**values)


def run(args: argparse.Namespace) -> int:
    """Plan every architecture, print the table, and write the JSON if asked."""
    started = time.perf_counter()
    request = request_from(args)
    base = SimParams().with_overrides(**overrides([], args.params))
    answer = plan(request, base, processes=args.processes, progress=True)
    answer["elapsed_s"] = time.perf_counter() - started
    print(
        f"{request.rate_per_s:g} calls/s, think median {request.think_median_s:g} s, SLO p95 "
        f"{request.slo_p95_ms:g} ms and {request.slo_completed_fraction:.0%} completed; "
        f"replicas of {request.vcpus_per_replica:g} vCPU, "
        f"{request.memory_gb_per_replica:g} GB, {request.connection_limit} connections, "
        f"CPU target {request.target_cpu_utilization:.0%}; "
        f"{request.replications} replications\n"
    )
    print(plan_table(answer))
    print(f"\nelapsed: {answer['elapsed_s']:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(answer, indent=2, default=float) + "\n")
    return 0

"""`labsim bench`: simulated calls per wall-second, each model against a bare SimPy loop,
and how long `labsim plan` takes to answer its default question."""

from __future__ import annotations

import argparse
import time

from labsim.cli.options import add_command
from labsim.model.checks import ParameterError
from labsim.study.benchmark import report
from labsim.study.capacity import plan
from labsim.study.plan_request import PlanRequest


def add_to(commands: argparse._SubParsersAction) -> None:
    """The `bench` command and its options."""
    bench = add_command(commands, "bench", "simulated calls per wall-second")
    bench.add_argument("--horizon-s", type=float, default=3600.0, help="simulated seconds")
    bench.add_argument("--repeats", type=int, default=3, help="passes per architecture")
    bench.add_argument("--seed", type=int, default=0, help="seed of the workload")
    bench.add_argument(
        "--no-plan",
        dest="plan",
        action="store_false",
        help="skip timing `plan` on its default question",
    )
    bench.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the benchmark table and, unless `--no-plan`, the time `plan` takes."""
    if not args.horizon_s > 0:
        raise ParameterError(f"horizon_s must be > 0, got {args.horizon_s!r}")
    started = time.perf_counter()
    print(report(args.horizon_s, args.repeats, args.seed))
    if args.plan:
        # `labsim plan` with no options asks the request's defaults.
        print(plan_timing(PlanRequest()))
    print(f"elapsed: {time.perf_counter() - started:.1f} s")
    return 0


def plan_timing(request: PlanRequest) -> str:
    """How long `plan` takes to answer `request` on every core, against its target."""
    started = time.perf_counter()
    plan(request)
    return (
        f"labsim plan, default settings, every core: "
        f"{time.perf_counter() - started:.1f} s (target: under 60 s)"
    )

"""`labsim mmc` and `labsim validate`: the simulation against queueing theory.

`mmc` puts one replica with C workers beside the M/M/c formulas; `validate` runs the
standard cases (`labsim.study.validation`) and exits 1 when theory falls outside a
case's confidence interval.
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd

from labsim.cli.options import add_command
from labsim.cli.progress import announce
from labsim.model.checks import ParameterError
from labsim.model.simulation import simulate
from labsim.study import theory, validation
from labsim.study.experiments import batch_means_interval, replication_seeds


def add_to(commands: argparse._SubParsersAction) -> None:
    """The `mmc` and `validate` commands and their options."""
    mmc = add_command(commands, "mmc", "one replica with C workers against M/M/c theory")
    mmc.add_argument("--arrival-rate", type=float, required=True, help="calls per second")
    mmc.add_argument("--service-rate", type=float, required=True, help="per worker, per second")
    mmc.add_argument("--servers", type=int, required=True, help="workers (c)")
    mmc.add_argument("--calls", type=int, default=50_000, help="calls to simulate")
    mmc.add_argument("--seed", type=int, default=0, help="seed of the run")
    mmc.add_argument("--json", action="store_true", help="print JSON rather than a list")
    mmc.set_defaults(run=run_mmc)

    checks = add_command(commands, "validate", "simulation against queueing theory")
    checks.add_argument("--replications", type=int, default=10, help="runs per case")
    checks.add_argument("--scale", type=float, default=1.0, help="multiplies the call counts")
    checks.add_argument("--level", type=float, default=0.99, help="confidence level")
    checks.add_argument("--seed", type=int, default=2026, help="seed the replications derive from")
    checks.set_defaults(run=run_validate)


def run_mmc(args: argparse.Namespace) -> int:
    """One replica with C workers against M/M/c theory: waits, responses, utilization."""
    if not (isinstance(args.calls, int) and args.calls >= 1):
        raise ParameterError(f"calls must be an integer >= 1, got {args.calls!r}")
    started = time.perf_counter()
    lam, mu, c = args.arrival_rate, args.service_rate, args.servers
    theory_wait_s = theory.mmc_mean_wait_s(lam, mu, c)  # rejects rho >= 1 and bad rates
    params = validation.queueing_params(lam, mu, args.calls, workers_per_replica=c)
    result = simulate(params, "mrtr", args.seed)
    calls = result.measured_calls()
    waits = calls["queue_wait_s"].to_numpy()
    responses = calls["time_in_system_s"].to_numpy()
    wait_mean, wait_hw = batch_means_interval(waits)
    response_mean, response_hw = batch_means_interval(responses)
    report = {
        "arrival_rate_per_s": lam,
        "service_rate_per_s": mu,
        "servers": c,
        "seed": args.seed,
        "calls_simulated": len(result.calls),
        "calls_measured": len(calls),
        "utilization": theory.utilization(lam, mu, c),
        "measured_utilization": result.summary["utilization"],
        "mean_wait_s": float(waits.mean()),
        "mean_wait_ci95_s": [wait_mean - wait_hw, wait_mean + wait_hw],
        "theory_mean_wait_s": theory_wait_s,
        "mean_response_s": float(responses.mean()),
        "mean_response_ci95_s": [response_mean - response_hw, response_mean + response_hw],
        "theory_mean_response_s": theory.mmc_mean_response_s(lam, mu, c),
        "probability_of_waiting": float((waits > 0).mean()),
        "theory_probability_of_waiting": theory.erlang_c(c, lam / mu),
        "elapsed_s": time.perf_counter() - started,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:32s} {value}")
    return 0


def run_validate(args: argparse.Namespace) -> int:
    """The standard cases against theory; status 1 if theory falls outside any."""
    started = time.perf_counter()
    if not args.scale > 0:
        raise ParameterError(f"scale must be > 0, got {args.scale!r}")
    replication_seeds(args.seed, args.replications)  # a bad count, before announcing
    cases = validation.standard_cases(args.scale)
    deployments = len({(case.params, case.architecture) for case in cases})
    announce(
        "validate",
        f"{len(cases)} cases against queueing theory: {deployments} deployments x "
        f"{args.replications} replications = {deployments * args.replications} runs",
    )
    verdicts = validation.validate(
        cases,
        replications=args.replications,
        seed=args.seed,
        level=args.level,
        progress=True,
    )
    table = validation.verdict_table(verdicts)
    pd.set_option("display.width", 200)
    print(
        f"simulation vs theory: {args.replications} replications per case, "
        f"{args.level:.0%} confidence intervals\n"
    )
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    failed = int((~table["passed"]).sum())
    print(f"\n{len(table) - failed} of {len(table)} cases agree with theory")
    print(f"elapsed: {time.perf_counter() - started:.1f} s")
    return 1 if failed else 0

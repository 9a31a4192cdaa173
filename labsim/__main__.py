"""Command line: compare the architectures, check the simulation against theory, time it.

    python -m labsim compare [--scenario NAME] [--replications N] [--json FILE] [--plots DIR]
    python -m labsim mmc --arrival-rate L --service-rate M --servers C --calls N --seed S --json
    python -m labsim validate [--replications N] [--scale X]
    python -m labsim bench [--horizon-s S] [--repeats N] [--no-plan]
    python -m labsim scenarios

Bad parameters print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pandas as pd

from labsim import scenarios
from labsim.params import ParameterError, SimParams

if TYPE_CHECKING:
    from labsim.capacity import PlanRequest

# (summary metric, row label, divisor) in the `compare` table.
TABLE_METRICS = (
    ("calls", "calls measured", 1),
    ("completed_fraction", "completed (fraction)", 1),
    ("failed", "failed", 1),
    ("lost", "lost", 1),
    ("abandoned", "abandoned", 1),
    ("state_losses", "state losses (cut calls)", 1),
    ("re_prompts", "re-prompts (answers asked again)", 1),
    ("new_questions", "new questions (version skew)", 1),
    ("retries", "retried requests", 1),
    ("offloads", "offloads (progress handed on)", 1),
    ("expired_states", "expired requestStates (asked anew)", 1),
    ("wasted_cpu_s", "wasted CPU (s)", 1),
    ("p50_latency_s", "p50 server latency (ms)", 1e-3),
    ("p95_latency_s", "p95 server latency (ms)", 1e-3),
    ("goodput_per_s", "goodput (calls/s)", 1),
    ("utilization", "utilization", 1),
    ("load_imbalance", "load imbalance (max/mean)", 1),
    ("mean_held_bytes", "mean memory held (MB)", 1e6),
    ("peak_held_bytes", "peak memory held (MB)", 1e6),
    ("peak_open_streams", "peak open SSE streams", 1),
    ("store_ops", "store operations", 1),
    ("tasks_started", "tasks started (acknowledged)", 1),
    ("tasks_completed", "tasks completed", 1),
    ("tasks_rejected", "tasks refused (store down)", 1),
    ("tasks_lost", "tasks lost (store wiped)", 1),
    ("tasks_expired", "tasks expired (TTL)", 1),
    ("tasks_taken_over", "task takeovers", 1),
    ("task_store_errors", "task store errors seen", 1),
    ("task_store_bytes", "task store traffic (MB)", 1e6),
    ("cost_per_million_calls_usd", "cost per million calls (USD)", 1),
    ("store_share_of_bill", "store share of the bill", 1),
    ("upgrade_duration_s", "upgrade duration (s)", 1),
    ("littles_law_error", "Little's law error (relative)", 1),
)


PARAMS_HELP = "measured parameter file (default: labsim/measured.json)"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _format(mean: float, half_width: float) -> str:
    if not math.isfinite(mean):
        return "-"
    if mean == 0 and not half_width:
        return "0"
    digits = 0 if abs(mean) >= 100 else 2 if abs(mean) >= 1 else 3
    text = f"{mean:,.{digits}f}"
    if math.isfinite(half_width) and half_width > 0:
        text += f" ± {half_width:,.{digits}f}"
    return text


def comparison_table(comparison: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """The printable architecture-by-metric table of one scenario (mean ± 95% CI)."""
    rows = comparison[comparison["scenario"] == scenario]
    architectures = list(dict.fromkeys(rows["architecture"]))
    has_tasks = bool((rows[rows["metric"] == "tasks_started"]["mean"] > 0).any())
    table = {}
    for metric, label, divisor in TABLE_METRICS:
        cells = rows[rows["metric"] == metric].set_index("architecture")
        if metric == "upgrade_duration_s" and cells["mean"].isna().all():
            continue
        if metric.startswith("task") and not has_tasks:
            continue
        table[label] = {
            a: _format(cells.at[a, "mean"] / divisor, cells.at[a, "ci_half_width"] / divisor)
            for a in architectures
        }
    return pd.DataFrame(table).T[architectures]


def _parse_value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _overrides(pairs: Sequence[str], params_file: str | None = None) -> dict[str, Any]:
    """Measured values from `params_file` (if any), then each `--set name=value` on top."""
    overrides: dict[str, Any] = {}
    if params_file:
        from labsim import measured

        overrides.update(measured.load(params_file).overrides())
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ParameterError(f"--set expects name=value, got {pair!r}")
        overrides[name.strip()] = _parse_value(value.strip())
    return overrides


def run_compare(args: argparse.Namespace) -> int:
    """`compare`: the architecture-by-metric table for one scenario or all."""
    from labsim.experiments import compare

    started = time.perf_counter()
    names = [args.scenario] if args.scenario else list(scenarios.SCENARIOS)
    overrides = _overrides(args.set, args.params)
    for name in names:
        scenarios.build(name, **overrides)  # reject bad names and values before running
    comparison = compare(
        names,
        args.replications,
        seed=args.seed,
        processes=args.processes,
        progress=sys.stderr.isatty(),
        **overrides,
    )
    pd.set_option("display.width", 200)
    for name in names:
        print(f"\n== {name}: {scenarios.describe(name)}")
        print(f"   mean ± 95% CI over {args.replications} replications, seed {args.seed}\n")
        print(comparison_table(comparison, name).to_string())
    if args.json:
        payload = {
            "scenarios": names,
            "replications": args.replications,
            "seed": args.seed,
            "overrides": overrides,
            "results": json.loads(comparison.to_json(orient="records")),
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
    if args.plots:
        from labsim.plots import write_figures

        write_figures(Path(args.plots), comparison, names, args.seed, overrides)
        print(f"plots written to {args.plots}")
    print(f"\nelapsed: {time.perf_counter() - started:.1f} s")
    return 0


def run_mmc(args: argparse.Namespace) -> int:
    """`mmc`: one replica with C workers against M/M/c theory."""
    from labsim import theory
    from labsim.experiments import batch_means_interval
    from labsim.simulation import simulate
    from labsim.validation import queueing_params

    if not (isinstance(args.calls, int) and args.calls >= 1):
        raise ParameterError(f"calls must be an integer >= 1, got {args.calls!r}")
    started = time.perf_counter()
    lam, mu, c = args.arrival_rate, args.service_rate, args.servers
    theory_wait_s = theory.mmc_mean_wait_s(lam, mu, c)  # rejects rho >= 1 and bad rates
    result = simulate(
        queueing_params(lam, mu, args.calls, workers_per_replica=c), "mrtr", args.seed
    )
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
    """`validate`: simulation against queueing theory; exit 1 if theory falls outside."""
    from labsim.validation import standard_cases, validate, verdict_table

    started = time.perf_counter()
    if not args.scale > 0:
        raise ParameterError(f"scale must be > 0, got {args.scale!r}")
    verdicts = validate(
        standard_cases(args.scale),
        replications=args.replications,
        seed=args.seed,
        level=args.level,
        progress=sys.stderr.isatty(),
    )
    table = verdict_table(verdicts)
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


def run_bench(args: argparse.Namespace) -> int:
    """`bench`: each model against a bare SimPy loop of the same queueing, and `plan`'s time."""
    from labsim.benchmark import report

    if not args.horizon_s > 0:
        raise ParameterError(f"horizon_s must be > 0, got {args.horizon_s!r}")
    request = _plan_request(parser().parse_args(["plan"])) if args.plan else None
    print(report(args.horizon_s, args.repeats, args.seed, request))
    return 0


def _plan_request(args: argparse.Namespace) -> PlanRequest:
    """The architect's question as the `plan` arguments put it."""
    from labsim.capacity import PlanRequest

    mix = {}
    for pair in args.tool_mix.split(","):
        name, _, share = pair.partition("=")
        mix[name.strip()] = _parse_value(share.strip())
    return PlanRequest(
        rate_per_s=args.rate,
        think_median_s=args.think_median_s,
        slo_p95_ms=args.slo_p95_ms,
        memory_gb_per_replica=args.memory_gb_per_replica,
        connection_limit=args.connection_limit,
        think_sigma=args.think_sigma,
        tools=tuple(mix),
        tool_mix=tuple(mix.values()),
        never_answer_fraction=args.never_answer,
        slo_completed_fraction=args.slo_completed,
        vcpus_per_replica=args.vcpus,
        target_cpu_utilization=args.target_cpu,
        replications=args.replications,
        measure_s=args.measure_s,
        seed=args.seed,
    )


def run_plan(args: argparse.Namespace) -> int:
    """`plan`: the smallest fleet per architecture that meets the SLO, priced per month."""
    from labsim.capacity import plan, plan_table

    started = time.perf_counter()
    request = _plan_request(args)
    base = SimParams().with_overrides(**_overrides([], args.params))
    answer = plan(request, base, processes=args.processes, progress=True)
    answer["elapsed_s"] = time.perf_counter() - started
    print(
        f"{args.rate:g} calls/s, think median {args.think_median_s:g} s, SLO p95 "
        f"{args.slo_p95_ms:g} ms and {args.slo_completed:.0%} completed; replicas of "
        f"{args.vcpus:g} vCPU, {args.memory_gb_per_replica:g} GB, {args.connection_limit} "
        f"connections, CPU target {args.target_cpu:.0%}; {args.replications} replications\n"
    )
    print(plan_table(answer))
    print(f"\nelapsed: {answer['elapsed_s']:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(answer, indent=2, default=float) + "\n")
    return 0


def run_scenarios(args: argparse.Namespace) -> int:
    """`scenarios`: list the named scenarios."""
    width = max(map(len, scenarios.SCENARIOS))
    for name in scenarios.SCENARIOS:
        print(f"{name:{width}s}  {scenarios.describe(name)}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The `python -m labsim` argument parser."""
    main = _Parser(prog="labsim", description=__doc__.split("\n")[0])
    commands = main.add_subparsers(dest="command", required=True, parser_class=_Parser)

    compare = commands.add_parser("compare", help="architecture x metric table per scenario")
    compare.add_argument("--scenario", help="one scenario (default: all)")
    compare.add_argument("--replications", type=int, default=3, help="runs per architecture")
    compare.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    compare.add_argument("--plots", metavar="DIR", help="also write figures (PNG) here")
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument("--processes", type=int, default=None, help="default: every core")
    compare.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter"
    )
    compare.add_argument("--params", metavar="FILE", help=PARAMS_HELP)
    compare.set_defaults(run=run_compare)

    mmc = commands.add_parser("mmc", help="one replica with C workers against M/M/c theory")
    mmc.add_argument("--arrival-rate", type=float, required=True, help="calls per second")
    mmc.add_argument("--service-rate", type=float, required=True, help="per worker, per second")
    mmc.add_argument("--servers", type=int, required=True, help="workers (c)")
    mmc.add_argument("--calls", type=int, default=50_000, help="calls to simulate")
    mmc.add_argument("--seed", type=int, default=0)
    mmc.add_argument("--json", action="store_true", help="print JSON")
    mmc.set_defaults(run=run_mmc)

    validate = commands.add_parser("validate", help="simulation against queueing theory")
    validate.add_argument("--replications", type=int, default=10)
    validate.add_argument("--scale", type=float, default=1.0, help="multiplies the call counts")
    validate.add_argument("--level", type=float, default=0.99, help="confidence level")
    validate.add_argument("--seed", type=int, default=2026)
    validate.set_defaults(run=run_validate)

    bench = commands.add_parser("bench", help="simulated calls per wall-second")
    bench.add_argument("--horizon-s", type=float, default=3600.0, help="simulated seconds")
    bench.add_argument("--repeats", type=int, default=3)
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--no-plan", dest="plan", action="store_false", help="skip timing `plan`")
    bench.set_defaults(run=run_bench)

    planning = commands.add_parser("plan", help="right-size each architecture, with its bill")
    planning.add_argument("--rate", type=float, default=20.0, help="calls per second")
    planning.add_argument("--think-median-s", type=float, default=10.0, help="per question")
    planning.add_argument("--think-sigma", type=float, default=1.5, help="lognormal shape")
    planning.add_argument("--slo-p95-ms", type=float, default=250.0, help="p95 server latency")
    planning.add_argument("--slo-completed", type=float, default=0.99, help="of answered calls")
    planning.add_argument("--memory-gb-per-replica", type=float, default=4.0)
    planning.add_argument("--connection-limit", type=int, default=1024)
    planning.add_argument("--vcpus", type=float, default=2.0, help="per replica")
    planning.add_argument("--target-cpu", type=float, default=0.7, help="CPU utilisation")
    planning.add_argument("--never-answer", type=float, default=0.05, help="share of users")
    planning.add_argument(
        "--tool-mix",
        default="crunch=0.5,get_weather=0.3,link_accounts=0.2",
        help="NAME=SHARE,... of the simulated tools",
    )
    planning.add_argument("--replications", type=int, default=3, help="runs per fleet size")
    planning.add_argument("--measure-s", type=float, default=300.0, help="simulated, after warm-up")
    planning.add_argument("--seed", type=int, default=0)
    planning.add_argument("--processes", type=int, default=None, help="default: every core")
    planning.add_argument("--json", metavar="FILE", help="also write the plan as JSON")
    planning.add_argument("--params", metavar="FILE", help=PARAMS_HELP)
    planning.set_defaults(run=run_plan)

    listing = commands.add_parser("scenarios", help="list the named scenarios")
    listing.set_defaults(run=run_scenarios)
    return main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; bad parameters are one line on stderr and status 2."""
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except ParameterError as error:
        print(f"labsim {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

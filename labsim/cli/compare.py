"""`labsim compare`: the architecture-by-metric table of each scenario, mean ± 95% CI.

Optionally the results as JSON (`--json`) and the figures of the comparison and of one
seeded run of each architecture per scenario (`--plots`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from pathlib import Path
from typing import Any

import pandas as pd

from labsim.cli.options import (
    PARAMS_HELP,
    PROCESSES_HELP,
    SET_HELP,
    add_command,
    add_round_options,
    overrides,
    round_overrides,
)
from labsim.cli.progress import announce
from labsim.model.metrics import bounds, clipped_interval
from labsim.model.simulation import ARCHITECTURES
from labsim.study import experiments, scenarios

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


def add_to(commands: argparse._SubParsersAction) -> None:
    """The `compare` command and its options."""
    compare = add_command(commands, "compare", "architecture x metric table per scenario")
    compare.add_argument("--scenario", help="one scenario (default: all of them)")
    compare.add_argument("--replications", type=int, default=3, help="runs per architecture")
    compare.add_argument("--json", metavar="FILE", help="also write the results as JSON here")
    compare.add_argument("--plots", metavar="DIR", help="also write figures (PNG) here")
    compare.add_argument("--seed", type=int, default=0, help="seed the replications derive from")
    compare.add_argument("--processes", type=int, default=None, help=PROCESSES_HELP)
    compare.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help=SET_HELP)
    compare.add_argument("--params", metavar="FILE", help=PARAMS_HELP)
    add_round_options(compare)
    compare.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Compare the architectures on one scenario or all; print, and write what was asked."""
    started = time.perf_counter()
    names = [args.scenario] if args.scenario else list(scenarios.SCENARIOS)
    changes = overrides(args.set, args.params)
    changes.update(round_overrides(args, changes))
    for name in names:
        scenarios.build(name, **changes)  # reject bad names and values before running
    experiments.replication_seeds(args.seed, args.replications)  # and a bad count
    architectures = len(ARCHITECTURES)
    runs = len(names) * architectures * args.replications
    announce(
        "compare",
        f"{len(names)} scenario{'s' if len(names) > 1 else ''} x {architectures} "
        f"architectures x {args.replications} replications = {runs} runs",
    )
    comparison = experiments.compare(
        names,
        args.replications,
        seed=args.seed,
        processes=args.processes,
        progress=True,
        **changes,
    )
    pd.set_option("display.width", 200)
    for name in names:
        print(f"\n== {name}: {scenarios.describe(name)}")
        print(f"   mean ± 95% CI over {args.replications} replications, seed {args.seed}\n")
        print(comparison_table(comparison, name).to_string())
    if args.json:
        write_json(Path(args.json), comparison, names, args, changes)
    if args.plots:
        from labsim.study import plots  # matplotlib loads only when figures are asked for

        runs = {name: experiments.one_run_each(name, args.seed, **changes) for name in names}
        plots.write_figures(Path(args.plots), comparison, runs)
        print(f"plots written to {args.plots}")
    print(f"\nelapsed: {time.perf_counter() - started:.1f} s")
    return 0


def write_json(
    path: Path,
    comparison: pd.DataFrame,
    names: list[str],
    args: argparse.Namespace,
    changes: dict[str, Any],
) -> None:
    """The comparison as `--json` writes it: what was asked, and the tidy results."""
    payload = {
        "scenarios": names,
        "replications": args.replications,
        "seed": args.seed,
        "overrides": changes,
        "results": json.loads(comparison.to_json(orient="records")),
    }
    # A measured round arrives as a ServiceTime: written as its fields.
    path.write_text(json.dumps(payload, indent=2, default=dataclasses.asdict) + "\n")


def _format(mean: float, half_width: float, low: float, high: float) -> str:
    """ "mean ± half-width", or "mean (from to to)" where the interval, kept within what the
    metric can take, is no longer symmetric: a count of 0.200 ± 0.555 reads "0.200 (0 to
    0.755)"."""
    if not math.isfinite(mean):
        return "-"
    if mean == 0 and not half_width:
        return "0"
    digits = 0 if abs(mean) >= 100 else 2 if abs(mean) >= 1 else 3
    text = f"{mean:,.{digits}f}"
    if not (math.isfinite(half_width) and half_width > 0):
        return text
    lower, upper = clipped_interval(mean, half_width, low, high)
    if (lower, upper) == (mean - half_width, mean + half_width):
        return f"{text} ± {half_width:,.{digits}f}"
    return f"{text} ({lower:,.{digits}f} to {upper:,.{digits}f})"


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
            a: _format(
                cells.at[a, "mean"] / divisor,
                cells.at[a, "ci_half_width"] / divisor,
                *(limit / divisor for limit in bounds(metric)),
            )
            for a in architectures
        }
    return pd.DataFrame(table).T[architectures]

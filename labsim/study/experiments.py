"""Experiments: seeded replications, confidence intervals, comparisons and sweeps.

One run is one sample. An experiment repeats a run with independent seeds
(the same seeds for every architecture, so they face the same calls), takes
the mean of each per-run metric and a 95% confidence interval from Student's
t, and spreads the runs over the machine's cores with a process pool.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from tqdm.auto import tqdm

from labsim.model.checks import ParameterError
from labsim.model.metrics import RunResult
from labsim.model.params import SimParams
from labsim.model.simulation import ARCHITECTURES, simulate
from labsim.study.scenarios import SCENARIOS, build

# Per-run metrics that are not single numbers, left out of means and intervals.
NON_SCALAR_METRICS = ("utilization_per_replica",)


@dataclass(frozen=True)
class RunSpec:
    """One run to do: parameters, architecture, seed, and labels to carry into the results."""

    params: SimParams
    architecture: str
    seed: int
    labels: tuple[tuple[str, Any], ...] = ()


def replication_seeds(seed: int, replications: int) -> list[int]:
    """Independent seeds for `replications` runs, derived from one seed."""
    if not (isinstance(replications, int) and replications >= 1):
        raise ParameterError(f"replications must be an integer >= 1, got {replications!r}")
    children = np.random.SeedSequence(seed).spawn(replications)
    return [int(child.generate_state(1)[0]) for child in children]


def confidence_interval(values: Iterable[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of the Student-t confidence interval of independent samples.

    With one sample the half-width is NaN: one run says nothing about its spread.
    """
    sample = np.asarray([v for v in values if v is not None], dtype=float)
    sample = sample[~np.isnan(sample)]
    n = len(sample)
    if n == 0:
        return float("nan"), float("nan")
    mean = float(sample.mean())
    if n == 1 or math.isinf(mean):
        # One run says nothing of its spread; nor do runs of which one never ended (an
        # infinite p95: a run with more misses than the quantile allows).
        return mean, float("nan")
    half_width = stats.t.ppf((1 + level) / 2, n - 1) * sample.std(ddof=1) / math.sqrt(n)
    return mean, float(half_width)


def batch_means_interval(
    values: Sequence[float], batches: int = 20, level: float = 0.95
) -> tuple[float, float]:
    """Mean and confidence half-width of one long, correlated run, by batch means.

    Consecutive observations (waits of successive calls) are correlated; the
    means of `batches` long consecutive batches are nearly independent.
    """
    sample = np.asarray(values, dtype=float)
    if len(sample) < batches:
        return confidence_interval(sample, level)
    usable = len(sample) - len(sample) % batches
    return confidence_interval(sample[:usable].reshape(batches, -1).mean(axis=1), level)


def _run_summary(spec: RunSpec) -> dict[str, Any]:
    summary = simulate(spec.params, spec.architecture, spec.seed).summary
    return {**dict(spec.labels), "architecture": spec.architecture, "seed": spec.seed, **summary}


def run_many(
    specs: Sequence[RunSpec],
    processes: int | None = None,
    progress: bool = False,
    description: str = "runs",
) -> pd.DataFrame:
    """Run every spec (in parallel across cores), one row of per-run metrics each.

    `processes=None` uses every core; 1 runs in this process. `progress`
    shows a tqdm bar, of `len(specs)` runs, labelled `description`; it stays at its
    total once done, so a log file ends with how many runs were made.
    """
    workers = min(os.cpu_count() or 1, len(specs)) if processes is None else processes
    bar = tqdm(total=len(specs), disable=not progress, desc=description, unit="run", leave=True)
    rows: list[dict[str, Any]] = [{} for _ in specs]
    if workers <= 1:
        for k, spec in enumerate(specs):
            rows[k] = _run_summary(spec)
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_run_summary, spec): k for k, spec in enumerate(specs)}
            for future in as_completed(futures):
                rows[futures[future]] = future.result()
                bar.update()
    bar.close()
    return pd.DataFrame(rows)


def replicate(
    params: SimParams,
    architecture: str = "mrtr",
    replications: int = 5,
    seed: int = 0,
    processes: int | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Per-run metrics of `replications` independent runs of one architecture."""
    seeds = replication_seeds(seed, replications)
    return run_many([RunSpec(params, architecture, s) for s in seeds], processes, progress)


def summarize_runs(runs: pd.DataFrame, by: Sequence[str], level: float = 0.95) -> pd.DataFrame:
    """Mean and confidence half-width of every numeric metric, per group (tidy rows)."""
    metrics = [
        c
        for c in runs.columns
        if c not in (*by, "seed", *NON_SCALAR_METRICS) and pd.api.types.is_numeric_dtype(runs[c])
    ]
    rows = []
    for key, group in runs.groupby(list(by), sort=False):
        labels = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        for metric in metrics:
            mean, half_width = confidence_interval(group[metric], level)
            rows.append(
                {
                    **labels,
                    "metric": metric,
                    "mean": mean,
                    "ci_half_width": half_width,
                    "replications": len(group),
                }
            )
    return pd.DataFrame(rows)


def compare(
    scenario: str | Sequence[str] | None = "steady",
    replications: int = 3,
    *,
    seed: int = 0,
    architectures: Sequence[str] = tuple(ARCHITECTURES),
    processes: int | None = None,
    progress: bool = False,
    **overrides: Any,
) -> pd.DataFrame:
    """Compare architectures on one scenario, several, or all (None).

    Returns tidy rows: scenario, architecture, metric, mean, ci_half_width,
    replications. `overrides` change scenario parameters by name
    (`replicas=8`, `drain_timeout_s=300`).
    """
    names = list(SCENARIOS) if scenario is None else scenario
    names = [names] if isinstance(names, str) else list(names)
    for architecture in architectures:
        if architecture not in ARCHITECTURES:
            raise ParameterError(f"unknown architecture {architecture!r}")
    seeds = replication_seeds(seed, replications)
    specs = [
        RunSpec(build(name, **overrides), arch, s, (("scenario", name),))
        for name in names
        for arch in architectures
        for s in seeds
    ]
    runs = run_many(specs, processes, progress)
    return summarize_runs(runs, ("scenario", "architecture"))


def sweep(
    scenario: str,
    parameter: str,
    values: Sequence[Any],
    replications: int = 3,
    *,
    seed: int = 0,
    architectures: Sequence[str] = tuple(ARCHITECTURES),
    processes: int | None = None,
    progress: bool = False,
    **overrides: Any,
) -> pd.DataFrame:
    """Vary one parameter over `values` for each architecture (tidy rows, as `compare`)."""
    seeds = replication_seeds(seed, replications)
    specs = [
        RunSpec(
            build(scenario, **{**overrides, parameter: value}),
            arch,
            s,
            ((parameter, value),),
        )
        for value in values
        for arch in architectures
        for s in seeds
    ]
    runs = run_many(specs, processes, progress)
    return summarize_runs(runs, (parameter, "architecture"))


def one_run_each(
    scenario: str,
    seed: int = 0,
    architectures: Sequence[str] = tuple(ARCHITECTURES),
    **overrides: Any,
) -> list[RunResult]:
    """One run of `scenario` per architecture, all from `seed` (the same calls for each):
    the runs whose latency and timelines a comparison's figures show."""
    params = build(scenario, **overrides)
    return [simulate(params, architecture, seed) for architecture in architectures]

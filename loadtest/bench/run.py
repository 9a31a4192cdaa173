"""Benchmarks, side by side in one run: the lab's server against its peers, every round kind.

Every server (`loadtest.bench.targets`) pinned to core 0 is driven by `wrk` pinned to
core 1, for each round kind of `loadtest.bench.rounds`. All servers stay up and each pass
visits every server and round in turn, so a burst of load elsewhere on the machine hits
them alike; the report gives each one's median pass and the spread of each ratio over the
passes (ratios are taken within a pass). Microbenchmarks time requestState against raw
AES-GCM and one request through each ASGI app.

The `shed` round is fair to the bare endpoint, which hashes nothing: the lab sheds `crunch`
after every unit (`SHED_EVERY_UNITS`), so the tool's own work in that round is one SHA-256
of 40 bytes, about 1 us, which the in-process microbenchmark times and prints beside the
round. What the round measures is the server: opening the state, re-running the handler
from the top, ending the attempt and sealing the state again.

Numbers are only comparable within one run: this machine is shared and noisy.
"""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import ExitStack
from statistics import median
from typing import Any

from loadtest.bench.commit_tree import CommitTree, checked_out
from loadtest.bench.microbench import in_process_microbench, seal_open_microbench
from loadtest.bench.rounds import KINDS
from loadtest.bench.targets import (
    OPTIONAL_SERVERS,
    SERVERS,
    STACK,
    RunningTarget,
    missing,
    target,
)
from loadtest.bench.wrk import run_wrk
from loadtest.config import LoadTestError
from server.harness.process import free_port

#: Warm-up cycles (every round kind for a second each) at most, and the change in req/s
#: between two cycles under which a server counts as warm. Node's JIT needs several cycles
#: before it settles; the Python servers are steady after two.
WARM_UP_CYCLES = 8
WARM_WITHIN = 0.15


def warm_up(server: RunningTarget, connections: int, kinds: tuple[str, ...] = KINDS) -> int:
    """Drive the rounds `kinds` of `server` until its req/s settles; the cycles it took."""
    previous = None
    for cycle in range(1, WARM_UP_CYCLES + 1):
        total = sum(
            run_wrk(server.url, server.rounds[kind], duration_s=1, connections=connections)[
                "requests_per_s"
            ]
            for kind in kinds
        )
        if previous is not None and abs(total - previous) <= WARM_WITHIN * previous:
            return cycle
        previous = total
    return WARM_UP_CYCLES


def bench_servers(
    names: tuple[str, ...],
    *,
    duration_s: float,
    connections: int,
    passes: int,
    kinds: tuple[str, ...] = KINDS,
    commits: tuple[CommitTree, ...] = (),
) -> dict[str, dict[str, Any]]:
    """Every server and round kind, timed in interleaved passes; every pass kept.

    `commits` are the lab at other commits, timed in the same passes as today's.
    """
    running: list[RunningTarget] = []
    try:
        for name in names:
            port = free_port()
            running.append(RunningTarget(target(name, port), port))
        for tree in commits:
            port = free_port()
            running.append(RunningTarget(tree.target(port), port))
        for r in running:
            warm_up(r, connections, kinds)
        report: dict[str, dict[str, Any]] = {r.target.name: {} for r in running}
        for n in range(passes):
            print(f"  pass {n + 1}/{passes}", file=sys.stderr, flush=True)
            for kind in kinds:
                for r in running:
                    sample = r.timed(kind, duration_s=duration_s, connections=connections)
                    report[r.target.name].setdefault(kind, []).append(sample)
        return report
    finally:
        for r in running:
            r.stop()


def _median_pass(samples: list[dict[str, float]]) -> dict[str, float]:
    return sorted(samples, key=lambda s: s["requests_per_s"])[len(samples) // 2]


def _spread(per_pass: list[float]) -> dict[str, float]:
    """A ratio over passes: its median and its range."""
    return {"median": median(per_pass), "min": min(per_pass), "max": max(per_pass)}


def _over(server: list[dict[str, float]], bare: list[dict[str, float]]) -> dict[str, float]:
    """One server's req/s over bare's, pass by pass: the median and the range."""
    return _spread(
        [s["requests_per_s"] / b["requests_per_s"] for s, b in zip(server, bare, strict=True)]
    )


def summarise(passes: dict[str, dict[str, list[dict[str, float]]]]) -> dict[str, Any]:
    """Medians, the lab's ratios to each peer (median and spread over passes) and tails."""
    kinds = tuple(passes["lab"])
    servers = {
        name: {kind: {**_median_pass(s), "passes": s} for kind, s in per_kind.items()}
        for name, per_kind in passes.items()
    }
    ratios: dict[str, dict[str, float]] = {}
    for peer in passes:
        if peer == "lab":
            continue
        for kind in kinds:
            per_pass = [
                lab["requests_per_s"] / other["requests_per_s"]
                for lab, other in zip(passes["lab"][kind], passes[peer][kind], strict=True)
            ]
            ratios[f"lab/{peer} {kind}"] = _spread(per_pass)
            if all("cpu_us_per_request" in s for s in passes[peer][kind] + passes["lab"][kind]):
                cpu = [
                    other["cpu_us_per_request"] / lab["cpu_us_per_request"]
                    for lab, other in zip(passes["lab"][kind], passes[peer][kind], strict=True)
                ]
                ratios[f"lab/{peer} {kind}"].update(
                    cpu_median=median(cpu), cpu_min=min(cpu), cpu_max=max(cpu)
                )
    tails = {}
    for kind in kinds:
        spread = {name: [s["p99_ms"] / s["p50_ms"] for s in passes[name][kind]] for name in passes}
        tails[kind] = {name: median(v) for name, v in spread.items()}
        if "bare" in spread:
            lab_over_bare = [
                lab / bare for lab, bare in zip(spread["lab"], spread["bare"], strict=True)
            ]
            tails[kind]["lab/bare"] = median(lab_over_bare)
    report: dict[str, Any] = {"servers": servers, "ratios": ratios, "p99_over_p50": tails}
    if "bare" in passes:
        # Each server against bare from the same passes: what the floor's state work alone
        # costs, and where the lab at another commit stood.
        over_bare = {
            name: {kind: _over(passes[name][kind], passes["bare"][kind]) for kind in kinds}
            for name in passes
            if name != "bare"
        }
        report["over_bare"] = over_bare
        if "floor" in over_bare:
            report["floor_over_bare"] = over_bare["floor"]
    lab = passes.get("lab", {})
    if lab and all("gc_collections_gen0" in s for samples in lab.values() for s in samples):
        report["lab_gc_per_10k_requests"] = {
            kind: [
                sum(s[f"gc_collections_gen{gen}"] for s in samples)
                * 10_000
                / sum(s["requests"] for s in samples)
                for gen in range(3)
            ]
            for kind, samples in lab.items()
        }
        report["lab_gc_requests"] = sum(s["requests"] for v in lab.values() for s in v)
    return report


def run_bench(
    *,
    duration_s: float = 3.0,
    connections: int = 10,
    passes: int = 3,
    servers: tuple[str, ...] = SERVERS,
    micro: bool = True,
    kinds: tuple[str, ...] = KINDS,
    compare_commits: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The whole benchmark: servers side by side in interleaved passes, then microbenchmarks.

    `compare_commits` names other commits whose lab runs in the same passes as today's.
    """
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (make setup installs it)")
    known = SERVERS + OPTIONAL_SERVERS
    unknown = [name for name in servers if name not in known]
    if unknown:
        raise LoadTestError(f"unknown server {', '.join(unknown)}: choose from {', '.join(known)}")
    skipped = {name: why for name in servers if (why := missing(name))}
    names = tuple(name for name in servers if name not in skipped)
    if "lab" not in names:
        raise LoadTestError("the bench compares the lab's server with its peers: include lab")
    odd = [kind for kind in kinds if kind not in KINDS]
    if odd or not kinds:
        raise LoadTestError(f"unknown round {', '.join(odd)}: choose from {', '.join(KINDS)}")
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "stack": "uvicorn " + " ".join(STACK),
        "connections": connections,
        "duration_s": duration_s,
        "passes": passes,
        "missing": skipped,
    }
    with ExitStack() as trees:
        commits = tuple(trees.enter_context(checked_out(rev)) for rev in compare_commits)
        report["commits"] = {tree.name: tree.commit for tree in commits}
        shown = [*names, *(tree.name for tree in commits)]
        print(f"benchmarking {', '.join(shown)} ...", file=sys.stderr, flush=True)
        timed = bench_servers(
            names,
            duration_s=duration_s,
            connections=connections,
            passes=passes,
            kinds=kinds,
            commits=commits,
        )
    report.update(summarise(timed))
    if micro:
        report["request_state"] = seal_open_microbench()
        report["in_process"] = in_process_microbench()
    return report

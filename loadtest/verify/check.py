"""`python -m loadtest verify-plan P`: a plan's verdicts checked on the live cluster.

For each architecture of the plan, its workload runs live at the plan's fleet and at one
replica fewer (`loadtest.verify.live_case`), each run judged as the plan judged its
simulation (`loadtest.verify.live_verdict`). The verdict held when the fleet met the SLO
and the plan's limits live as the plan said, and one fewer missed them as it said.

The document says for each architecture the sizes run, the scaling (if this machine could
not host the plan), the live figures at both sizes beside the plan's, and whether the
verdict held; at the top, whether everything was judged (`judged`, and `reason` when not:
a run whose replicas did not get their CPU, or a plan this machine cannot host).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from labsim.study.constraints import Limits
from labsim.study.plan import FleetVerdict, Plan
from loadtest.config import LoadTestError
from loadtest.harness.cluster import Cluster
from loadtest.probes.replica_load import ReplicaSampler
from loadtest.scenarios.run import run_scenario
from loadtest.verify.deployment_verdict import undecided
from loadtest.verify.hosting import Hosting
from loadtest.verify.live_case import (
    LiveCase,
    live_config,
    scale_case,
    scenario_command,
    warmup_s,
)
from loadtest.verify.live_verdict import BalancerSampler, LiveRun, judge_run, per_replica

Progress = Callable[[str], None]
#: Seconds at the end of a run whose calls are not judged (they meet the run's end).
TAIL_S = 1.0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def verify_plan(
    plan: Plan,
    *,
    source: str = "plan",
    archs: list[str] | None = None,
    judged_s: float = 30.0,
    warmup: float | None = None,
    hosting: Hosting | None = None,
    progress: Progress = _say,
) -> dict[str, Any]:
    """Run the plan's architectures live (all of them, or `archs`), each for a warm-up and
    `judged_s` judged seconds at its fleet and one fewer; the verification document of
    the plan read from `source`."""
    hosting = hosting or Hosting()
    warm_s = warmup_s(plan) if warmup is None else warmup
    chosen = archs or list(plan.architectures)
    document: dict[str, Any] = {
        "version": 1,
        "plan": source,
        "plan_command": plan.command,
        "judged_s": judged_s,
        "warmup_s": warm_s,
        "hosting": dataclasses.asdict(hosting),
        "machine": {"cpus": os.cpu_count(), "load_average_before": os.getloadavg()},
        "architectures": {},
    }
    for arch in chosen:
        answer = plan.architectures.get(arch)
        if answer is None:
            document["architectures"][arch] = _unjudged(None, f"the plan has no answer for {arch}")
        elif answer.fleet is None:
            # No fleet meets, says the plan, and why: nothing to check live.
            document["architectures"][arch] = {
                **_unjudged(None, f"not planned: {answer.reason}"),
                "planned": False,
            }
        else:
            document["architectures"][arch] = check_architecture(
                plan, arch, judged_s, warm_s, hosting, progress
            )
    planned = {a: e for a, e in document["architectures"].items() if e.get("planned", True)}
    reasons = [
        f"{arch}: {entry['reason']}" for arch, entry in planned.items() if not entry["judged"]
    ]
    if not planned:
        reasons.append("the plan names a fleet for none of the architectures checked")
    document["judged"] = not reasons
    if reasons:
        document["reason"] = "; ".join(reasons)
    document["machine"]["load_average_after"] = os.getloadavg()
    document["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return document


def check_architecture(
    plan: Plan, arch: str, judged_s: float, warm_s: float, hosting: Hosting, progress: Progress
) -> dict[str, Any]:
    """One architecture: its fleet and one fewer, live, beside the plan's answer."""
    answer = plan.architectures[arch]
    try:
        case = scale_case(plan, arch, hosting)
    except LoadTestError as refused:
        return _unjudged(answer.replicas, str(refused))
    entry: dict[str, Any] = {
        "replicas": case.replicas,
        "plan": _planned(answer.fleet),
        "scale": case.scale,
        "rate_per_s": case.rate_per_s,
        "notes": case.notes,
    }
    progress(f"{case.arch}: {case.replicas} replicas at {case.rate_per_s:g} calls/s")
    at_n = live_run(plan, case, case.replicas, judged_s, warm_s, hosting, progress)
    entry.update(live=at_n["live"], command=at_n["command"])
    judged = [at_n]
    if case.one_fewer is None:
        entry["one_fewer_reason"] = answer.one_fewer_reason or "no smaller fleet was run"
        if case.scale < 1 and answer.one_fewer is not None:
            entry["one_fewer_reason"] = "the scaled fleet has one replica: nothing smaller"
    else:
        progress(f"{case.arch}: one fewer, {case.one_fewer} replicas")
        fewer = live_run(plan, case, case.one_fewer, judged_s, warm_s, hosting, progress)
        entry["one_fewer"] = {
            "replicas": case.one_fewer,
            "plan": _planned(answer.one_fewer),
            "live": fewer["live"],
            "command": fewer["command"],
        }
        judged.append(fewer)
    unjudged = [run["reason"] for run in judged if not run["judged"]]
    entry["judged"] = not unjudged
    if unjudged:
        entry["reason"] = "; ".join(unjudged)
        entry["verdict_held"] = None
        return entry
    sizes = {"held_at_n": (at_n["live"], answer.fleet)}
    if "one_fewer" in entry:
        sizes["held_at_one_fewer"] = (entry["one_fewer"]["live"], answer.one_fewer)
    judge_sizes(entry, sizes)
    return entry


def judge_sizes(
    entry: dict[str, Any], sizes: dict[str, tuple[dict[str, Any], FleetVerdict | None]]
) -> None:
    """Set in `entry` whether each size's live run (by its key: `held_at_n`, ...) bore out
    the plan's verdict of it, and whether the verdict held over them; a size the plan left
    undecided is not judged (None, and a note), and with none decided nothing is."""
    undecided_sizes = []
    for key, (live, said) in sizes.items():
        why_not = undecided(said, live)
        if why_not is not None:
            undecided_sizes.append(why_not)
            entry[key] = None
        else:  # a size the plan has no verdict of, it said misses
            entry[key] = live["meets"] == (said is not None and said.meets)
    entry["notes"] = [*entry.get("notes", []), *undecided_sizes]
    decided = [entry[key] for key in sizes if entry[key] is not None]
    if not decided:
        entry.update(judged=False, reason="; ".join(undecided_sizes), verdict_held=None)
        return
    entry["verdict_held"] = all(decided)


def live_run(
    plan: Plan,
    case: LiveCase,
    replicas: int,
    judged_s: float,
    warm_s: float,
    hosting: Hosting,
    progress: Progress,
) -> dict[str, Any]:
    """One live run of the plan's workload on `replicas` replicas, judged."""
    config = live_config(plan, case, replicas, warm_s + judged_s + TAIL_S)
    probes: dict[str, Any] = {}

    def on_cluster(cluster: Cluster, moment: str) -> None:
        if moment == "before":
            seen = {name: (r.pid, r.port) for name, r in cluster.replicas.items() if r.pid}
            probes["replicas"] = ReplicaSampler(seen).start()
            probes["balancer"] = BalancerSampler(cluster.api).start()
        else:
            probes["replicas"].stop()
            probes["balancer"].stop()

    summary = run_scenario(config, progress=progress, on_cluster=on_cluster)
    workers = plan.params.cluster.workers_per_replica
    calls = summary["calls"]
    first = min((c["started"] for c in calls), default=time.time())
    window = (first + warm_s, first + warm_s + judged_s)
    run = LiveRun(
        replicas=replicas,
        calls=calls,
        window_s=window,
        balancer=probes["balancer"].window(*window),
        per_replica=per_replica(probes["replicas"], *window, workers),
        rate_per_s=case.rate_per_s,
        workers_per_replica=workers,
    )
    limits = Limits.of(plan.request)
    judged = judge_run(run, limits, hosting.max_cpu_wait_share, hosting.max_cpu_wait_of_slo)
    judged["command"] = scenario_command(config)
    return judged


def _planned(verdict: FleetVerdict | None) -> dict[str, Any]:
    """What the plan said of one fleet size, beside the live run's figures."""
    if verdict is None:
        return {"replicas": None, "meets": None, "p95_ms": None, "completed_share": None}
    return {
        "replicas": verdict.replicas,
        "meets": verdict.meets,
        "p95_ms": verdict.p95_ms,
        "completed_share": verdict.completed_share,
    }


def _unjudged(replicas: int | None, reason: str) -> dict[str, Any]:
    return {"replicas": replicas, "judged": False, "reason": reason, "verdict_held": None}

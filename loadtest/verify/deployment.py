"""`python -m loadtest verify-plan P --target URL --replicas N`: a plan checked against a
deployment the lab did not start.

The plan's workload runs against the deployment as it stands: the plan's arrival rate
(open loop), think time, users who never answer and client retries, its tool mix under the
tools' own names, each call by the swarm's users of a target (`python -m loadtest swarm
--target`, a process of its own). A deployment is not scaled: its size is the operator's,
so a rate this machine's load generator cannot start is refused before anything starts, as
is a plan whose tools the deployment does not list (naming them). Optionally a second
deployment one replica smaller (`--target-one-fewer`) is run the same way.

Each run is judged by `loadtest.verify.live_verdict.judge_run`, the rule the live check of
the lab's cluster and the plan's simulation use. What the lab cannot see of replicas it
does not run is said, not judged: their CPU and memory, unless their `/metrics` state the
process's own figures (`--replica-metrics`, `loadtest.verify.replica_metrics`); their open
connections and a balancer's down-marks, of which only the answers 503 reaching the
callers are seen. The document has the shape of the live check's (`loadtest.verify.check`)
so that its report prints it, each run's `constraints` saying held, broken or not seen.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from labsim.study.constraints import Limits
from labsim.study.plan import FleetVerdict, Plan
from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.target import Auth, TargetError, discover
from loadtest.verify.deployment_verdict import constraint_states, held, undecided, unseen_miss
from loadtest.verify.hosting import Hosting
from loadtest.verify.live_case import open_calls, warmup_s
from loadtest.verify.live_verdict import LiveRun, judge_run
from loadtest.verify.plan_file import tool_shares
from loadtest.verify.replica_metrics import MetricsSampler
from server.protocol.versions import LEGACY_VERSION, MODERN_VERSION

Progress = Callable[[str], None]
#: Seconds at the end of a run whose calls are not judged (they meet the run's end).
TAIL_S = 1.0
#: Seconds the swarm may take beyond its run and the wait for its calls in progress to
#: end (the load test's stop timeout) to start, stop and write its summary.
SWARM_GRACE_S = 120.0
#: The swarm's error of a call cut by the end of its run (its user still thinking).
CUT_BY_RUN_END = "still running when the run ended"


@dataclass(frozen=True)
class Deployment:
    """The deployment a plan is checked against: its URL and size, the replicas'
    `/metrics` where they expose them, and how its callers authenticate."""

    url: str
    replicas: int
    metrics_urls: tuple[str, ...] = ()
    token: str | None = None
    tokens_file: str | None = None
    workload: str | None = None

    def auth(self) -> Auth:
        return Auth.from_options([self.token] if self.token else None, self.tokens_file)


def era_of(arch: str) -> str:
    """The protocol era a deployment's users speak for one architecture of the plan."""
    return MODERN_VERSION if arch == "mrtr" else LEGACY_VERSION


def check_deployment(plan: Plan, arch: str, deployment: Deployment, hosting: Hosting) -> None:
    """Refuse, before anything starts, a deployment that cannot run the plan's workload:
    one that does not list the plan's tools or speak the architecture's era, or a rate
    this machine's load generator cannot start (a `LoadTestError` saying which)."""
    if deployment.replicas < 1:
        raise LoadTestError(f"--replicas must be 1 or more, got {deployment.replicas}")
    rate = plan.request.rate_per_s
    if rate > hosting.max_rate_per_s or open_calls(plan, rate) > hosting.max_open_calls:
        raise LoadTestError(
            f"the plan's {rate:g} calls/s ({open_calls(plan, rate):.0f} open at once) is "
            f"beyond what this machine's load generator starts (--max-rate "
            f"{hosting.max_rate_per_s:g}, --max-open-calls {hosting.max_open_calls}); a "
            "deployment's load is not scaled down: raise them or check from a larger machine"
        )
    try:
        target = discover(deployment.url, deployment.auth())
        target.eras_for(era_of(arch))
    except TargetError as error:
        raise LoadTestError(str(error)) from None
    missing = [name for name in tool_shares(plan) if name not in target.tools]
    if missing:
        raise LoadTestError(
            f"the plan's tools {', '.join(map(repr, missing))} are not listed by "
            f"{deployment.url}; it lists: {', '.join(sorted(target.tools)) or 'none'}"
        )


def planned_at(plan: Plan, arch: str, replicas: int) -> FleetVerdict | None:
    """What the plan said of `replicas` replicas: its fleet's verdict or one fewer's."""
    answer = plan.architectures[arch]
    for verdict in (answer.fleet, answer.one_fewer):
        if verdict is not None and verdict.replicas == replicas:
            return verdict
    return None


def swarm_argv(
    plan: Plan, arch: str, deployment: Deployment, duration_s: float, json_path: str
) -> list[str]:
    """The headless swarm's arguments that run the plan's workload on the deployment."""
    request, client = plan.request, plan.params.client
    tools = ",".join(f"{name}={share!r}" for name, share in tool_shares(plan).items())
    argv = [
        "--target", deployment.url, "--headless", "--workers", "0",
        "--arch", arch, "--era", era_of(arch), "--tools", tools,
        "--rate", f"{request.rate_per_s!r}", "--duration", f"{duration_s:g}",
        "--think-time-median-s", f"{request.think_time_median_s!r}",
        "--think-time-sigma", f"{request.think_time_sigma!r}",
        "--never-answer", f"{request.never_answer_share!r}",
        "--answer-timeout-s", f"{request.answer_timeout_s!r}",
        "--max-retries", str(client.max_retries),
        "--retry-backoff", f"{client.retry_backoff_s!r}",
        "--retry-backoff-max", f"{client.retry_backoff_s * 2 ** max(client.max_retries, 1)!r}",
    ]  # fmt: skip
    for flag, value in (
        ("--token", deployment.token),
        ("--tokens-file", deployment.tokens_file),
        ("--workload", deployment.workload),
    ):
        if value:
            argv += [flag, value]
    return [*argv, "--json", json_path]


def stop_timeout_s(plan: Plan, arch: str) -> float:
    """Seconds the swarm lets calls in progress end once its run is over: the load
    test's own, for the plan's think time and users who never answer."""
    request = plan.request
    return LoadTestConfig(
        arch=arch,
        think_time_median_s=request.think_time_median_s,
        never_answer_share=request.never_answer_share,
        answer_timeout_s=request.answer_timeout_s,
    ).stop_timeout_s


def run_on(
    plan: Plan,
    arch: str,
    deployment: Deployment,
    judged_s: float,
    warm_s: float,
    hosting: Hosting,
    progress: Progress,
) -> dict[str, Any]:
    """One run of the plan's workload on the deployment, judged."""
    workers = plan.params.cluster.workers_per_replica
    metrics = MetricsSampler(list(deployment.metrics_urls), token=deployment.token)
    with tempfile.TemporaryDirectory(prefix="mrtr-verify-") as work:
        summary_path = str(Path(work) / "summary.json")
        argv = swarm_argv(plan, arch, deployment, warm_s + judged_s + TAIL_S, summary_path)
        progress(f"{arch}: {deployment.replicas} replicas at {deployment.url}")
        metrics.start()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "loadtest", "swarm", *argv],
                capture_output=True,
                text=True,
                timeout=warm_s + judged_s + TAIL_S + stop_timeout_s(plan, arch) + SWARM_GRACE_S,
            )
        except subprocess.TimeoutExpired:
            done = None
        finally:
            metrics.stop()
        command = "python -m loadtest swarm " + shlex.join(argv[:-2])
        if done is None or done.returncode != 0 or not Path(summary_path).exists():
            why = "did not end in time" if done is None else done.stderr.strip()[-600:]
            return {
                "replicas": deployment.replicas,
                "judged": False,
                "reason": f"the swarm on {deployment.url} failed: {why}",
                "command": command,
            }
        calls = json.loads(Path(summary_path).read_text())["calls"]
    first = min((c["started"] for c in calls), default=time.time())
    window = (first + warm_s, first + warm_s + judged_s)
    refused = sum("503" in str(c.get("error") or "") for c in calls if c["outcome"] != "completed")
    seen = metrics.per_replica(*window, workers)
    run = LiveRun(
        replicas=deployment.replicas,
        calls=calls,
        window_s=window,
        balancer={"down_marks": 0, "replica_5xx": refused, "balancer_5xx": 0},
        per_replica=seen,
        rate_per_s=plan.request.rate_per_s,
        workers_per_replica=workers,
    )
    judged = judge_run(run, Limits.of(plan.request), hosting.max_cpu_wait_share)
    states = constraint_states(judged["live"]["broke"], bool(seen), refused)
    judged["live"]["constraints"] = states
    for constraint, state in states.items():
        if state.startswith("not seen"):  # a use of 0 would read as seen and idle
            judged["live"]["use"][constraint] = None
    judged["live"]["metrics_seen"] = sorted(seen)
    # Lost as the live check of the lab's cluster counts them, and said: a call still
    # running when the swarm's stop timeout ran out (a user thinking long, or a replica
    # that never answered) cannot be told apart.
    window_calls = [c for c in calls if window[0] <= c["started"] <= window[1]]
    judged["live"]["cut_by_run_end"] = sum(c.get("error") == CUT_BY_RUN_END for c in window_calls)
    judged["command"] = command
    return judged


def verify_deployment(
    plan: Plan,
    arch: str,
    at_n: Deployment,
    one_fewer: Deployment | None = None,
    *,
    source: str = "plan",
    judged_s: float = 30.0,
    warmup: float | None = None,
    hosting: Hosting | None = None,
    progress: Progress = lambda line: print(line, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """The plan's architecture `arch` checked against a deployment of N replicas (and one of
    N - 1); the verification document, in the live check's shape. A `LoadTestError`
    before anything starts for a deployment that cannot run the plan's workload."""
    hosting = hosting or Hosting()
    warm_s = warmup_s(plan) if warmup is None else warmup
    answer = plan.architectures.get(arch)
    if answer is None:
        raise LoadTestError(
            f"the plan has no answer for {arch}: it answers {', '.join(plan.architectures)}"
        )
    deployments = [at_n] if one_fewer is None else [at_n, one_fewer]
    if one_fewer is not None and at_n.replicas < 2:
        raise LoadTestError(
            f"--target-one-fewer needs --replicas 2 or more: {at_n.replicas} less one is none"
        )
    if one_fewer is not None and one_fewer.replicas != at_n.replicas - 1:
        raise LoadTestError(
            f"--target-one-fewer is one replica fewer than --replicas {at_n.replicas}: "
            f"{at_n.replicas - 1}, not {one_fewer.replicas}"
        )
    for deployment in deployments:
        check_deployment(plan, arch, deployment, hosting)
    document: dict[str, Any] = {
        "version": 1,
        "plan": source,
        "plan_command": plan.command,
        "target": at_n.url,
        "judged_s": judged_s,
        "warmup_s": warm_s,
        "hosting": asdict(hosting),
        "machine": {"cpus": os.cpu_count(), "load_average_before": os.getloadavg()},
    }
    entry = _entry(plan, arch, at_n, one_fewer, judged_s, warm_s, hosting, progress)
    document["architectures"] = {arch: entry}
    document["judged"] = entry["judged"]
    if not entry["judged"]:
        document["reason"] = f"{arch}: {entry['reason']}"
    document["machine"]["load_average_after"] = os.getloadavg()
    document["at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return document


def _entry(
    plan: Plan,
    arch: str,
    at_n: Deployment,
    one_fewer: Deployment | None,
    judged_s: float,
    warm_s: float,
    hosting: Hosting,
    progress: Progress,
) -> dict[str, Any]:
    """One architecture's column: the deployment at N (and N - 1) beside the plan."""
    said = planned_at(plan, arch, at_n.replicas)
    entry: dict[str, Any] = {
        "replicas": at_n.replicas,
        "plan": _planned(said),
        "scale": 1.0,
        "rate_per_s": plan.request.rate_per_s,
        "notes": [f"against the deployment at {at_n.url}, not the lab's cluster"],
    }
    runs = [run_on(plan, arch, at_n, judged_s, warm_s, hosting, progress)]
    entry["command"] = runs[0]["command"]
    if "live" in runs[0]:
        entry["live"] = runs[0]["live"]
    if one_fewer is None:
        entry["one_fewer_reason"] = "no deployment one replica smaller was given"
    else:
        fewer = run_on(plan, arch, one_fewer, judged_s, warm_s, hosting, progress)
        runs.append(fewer)
        if "live" in fewer:
            entry["one_fewer"] = {
                "replicas": one_fewer.replicas,
                "plan": _planned(planned_at(plan, arch, one_fewer.replicas)),
                "live": fewer["live"],
                "command": fewer["command"],
            }
    for run in runs:
        for constraint, state in (run.get("live") or {}).get("constraints", {}).items():
            note = f"{run['replicas']} replicas: {constraint}: {state}"
            if state.startswith("not seen") and note not in entry["notes"]:
                entry["notes"].append(note)
        cut = (run.get("live") or {}).get("cut_by_run_end")
        if cut:
            entry["notes"].append(
                f"{run['replicas']} replicas: {cut} judged calls were still running when the "
                "swarm's stop timeout ran out (a user thinking long, or a replica that never "
                "answered): lost, as the live check counts them"
            )
    unjudged = [run["reason"] for run in runs if not run["judged"]]
    if said is None:
        unjudged.append(_unplanned(plan, arch, at_n.replicas))
    entry["judged"] = not unjudged
    if unjudged:
        entry["reason"] = "; ".join(unjudged)
        entry["verdict_held"] = None
        return entry
    entry["held_at_n"] = held(entry["live"], said)
    if "one_fewer" in entry:
        fewer_live = entry["one_fewer"]["live"]
        fewer_said = planned_at(plan, arch, entry["one_fewer"]["replicas"])
        entry["held_at_one_fewer"] = held(fewer_live, fewer_said)
        if entry["held_at_one_fewer"] is None and fewer_said is not None:
            entry["notes"].append(undecided(fewer_said, fewer_live) or unseen_miss(fewer_said))
    if entry["held_at_n"] is None and said is not None:
        reason = undecided(said, entry["live"]) or unseen_miss(said)
        entry.update(judged=False, reason=reason, verdict_held=None)
        return entry
    entry["verdict_held"] = entry["held_at_n"] and entry.get("held_at_one_fewer") is not False
    return entry


def _unplanned(plan: Plan, arch: str, replicas: int) -> str:
    answer = plan.architectures[arch]
    sizes = [v.replicas for v in (answer.fleet, answer.one_fewer) if v is not None]
    judged = " and ".join(map(str, sizes)) or "no fleet"
    return f"the plan said nothing of {replicas} replicas (it judged {judged})"


def _planned(verdict: FleetVerdict | None) -> dict[str, Any]:
    if verdict is None:
        return {"replicas": None, "meets": None, "p95_ms": None, "completed_share": None}
    return {
        "replicas": verdict.replicas,
        "meets": verdict.meets,
        "p95_ms": verdict.p95_ms,
        "completed_share": verdict.completed_share,
    }

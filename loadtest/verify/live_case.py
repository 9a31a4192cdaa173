"""A plan's workload as the lab's live cluster runs it, scaled openly to what this machine
can host.

The lab's demo tools do little but ask, so where the plan's rounds carry work of their own
(the plan's round less the request's overhead its model split off) each tool of the plan
is played by a demo tool with as many rounds that spends that work: a tool of one round by
`crunch`, sized to the work, and a tool of two rounds (one asking round) by `quote`, whose
`cpu_ms` each call draws from the plan's distribution. A replica serves its rounds on one
event loop: one worker. A plan whose replica has more workers gets them from the replica's
CPU pool (`--cpu-workers`, all tool work off the loop).

Every other figure is the plan's: the arrival rate (open loop), the think time, the users
who never answer and the answer timeout they meet, the connection limit, the client's
retries. A plan this machine cannot host (too many replicas, calls or CPU for it) is scaled
down: fewer replicas, each with the plan's load per replica, so the use of each replica's
limits is the plan's; one fewer is then one fewer of the scaled fleet, each of its
replicas carrying more than one fewer of the plan's would, which the output says.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

from labsim.model.demand import WorkloadParams
from labsim.model.tools import TOOLS
from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.verify.hosting import Hosting
from loadtest.verify.plan_file import Answer, Plan, RoundWork
from server.flags import to_argv

#: The lab's demo tool that plays a plan's tool of each number of rounds, when the
#: plan's rounds carry work of their own.
PLAYED_BY = {1: "crunch", 2: "quote"}
#: Tool work per round below which the plan's tools are run as themselves (ms): the
#: plan's round is then the server's own overhead, which the demo tools have.
NO_TOOL_WORK_MS = 0.01
#: Seconds of every live run before its calls are judged, beyond the time the plan's
#: users who never answer hold their calls.
WARMUP_S = 5.0
#: The lab's own demo tools' request body per round (bytes, `labsim/measured.json`): a
#: plan whose requests are much larger is of a tool whose callers send documents.
LAB_REQUEST_BYTES = WorkloadParams().request_bytes
#: How many times the lab's own a plan's requests must be to have their arguments padded.
PADDING_FROM = 4


def argument_bytes(plan: Plan) -> int:
    """The size the live calls' text argument is padded to, so that their requests carry
    the plan's bytes per round: 0 for requests like the lab's own. The padding rides on
    every MRTR round (a retry sends its arguments again) and on a legacy call's first."""
    extra = plan.workload.request_bytes - LAB_REQUEST_BYTES
    return round(extra) if plan.workload.request_bytes > PADDING_FROM * LAB_REQUEST_BYTES else 0


@dataclass(frozen=True)
class LiveCase:
    """One architecture's check: the sizes run live, at what rate, and how it was scaled."""

    arch: str
    replicas: int
    one_fewer: int | None
    rate_per_s: float
    scale: float
    tools: dict[str, float]
    notes: list[str] = field(default_factory=list)


def rounds_of(tool: str) -> int:
    """Rounds (requests) of one call of a plan's tool, nothing going wrong."""
    if tool not in TOOLS:
        raise LoadTestError(f"the plan's tool {tool!r} is not one labsim models")
    return TOOLS[tool].requests()


def live_tools(plan: Plan) -> tuple[dict[str, float], list[str]]:
    """The demo tools that play the plan's, with their shares, and what was mapped."""
    work = plan.workload
    tool_work = live_tool_work(plan)
    if tool_work.mean_ms < NO_TOOL_WORK_MS:
        return dict(work.tools), []
    padding = argument_bytes(plan)
    if padding:
        # The rounds' work is reading the documents the calls send: the tools play
        # themselves with arguments as large, and the replica reads them at its own speed.
        return dict(work.tools), [
            f"the plan's requests carry {work.request_bytes:,.0f} bytes a round: its tools "
            f"play themselves, their text argument padded to {padding:,} bytes; their "
            f"{work.round_work.mean_ms:.3g} ms a round is reading it, at this machine's speed"
        ]
    tools: dict[str, float] = {}
    for tool, share in work.tools.items():
        rounds = rounds_of(tool)
        if rounds not in PLAYED_BY:
            raise LoadTestError(
                f"the plan's tool {tool!r} has {rounds} rounds; no demo tool with as many "
                f"spends work of its own (those of {sorted(PLAYED_BY)} rounds do)"
            )
        tools[PLAYED_BY[rounds]] = tools.get(PLAYED_BY[rounds], 0.0) + share
    mapped = sorted({f"{tool} -> {PLAYED_BY[rounds_of(tool)]}" for tool in work.tools})
    notes = [
        f"tools played by demo tools of as many rounds spending the plan's tool work "
        f"({tool_work.mean_ms:.3g} ms a round beyond the request's "
        f"{work.overhead_ms:.3g} ms): {', '.join(mapped)}"
    ]
    if work.worker_speed != 1.0:
        notes.append(
            f"a worker of {work.worker_speed:g} vCPU played by a whole core working "
            f"1/{work.worker_speed:g} as long on the tool's part"
        )
    return tools, notes


def cpu_cores_needed(plan: Plan, rate_per_s: float) -> float:
    """CPU cores the plan's rounds take here at `rate_per_s` calls a second (a worker
    slower than a vCPU is played by a whole core working longer)."""
    work = plan.workload
    total = sum(work.tools.values()) or 1.0
    rounds = sum(share * rounds_of(tool) for tool, share in work.tools.items()) / total
    return rate_per_s * rounds * work.round_work.mean_ms / 1e3 / work.worker_speed


def live_tool_work(plan: Plan) -> RoundWork:
    """The tool work per round a demo tool spends live: the plan's, or, for a worker
    slower than a vCPU (`worker_speed` < 1), as long as the whole round takes there, less
    the request's own work, which the live replica does at full speed."""
    work = plan.workload
    if work.worker_speed == 1.0:
        return work.tool_work
    mean_ms = (work.tool_work.mean_ms + work.overhead_ms) / work.worker_speed - work.overhead_ms
    std_ms = work.tool_work.cv * work.tool_work.mean_ms / work.worker_speed
    return RoundWork(mean_ms, std_ms / mean_ms if mean_ms > 0 else 0.0, work.tool_work.kind)


def open_calls(plan: Plan, rate_per_s: float) -> float:
    """Calls open at once at `rate_per_s` (Little's law): the users' think time, and the
    answer timeout of those who never answer."""
    work = plan.workload
    think_mean_s = work.think_time_median_s * math.exp(work.think_time_sigma**2 / 2)
    never = work.never_answer_share
    return rate_per_s * ((1 - never) * think_mean_s + never * work.answer_timeout_s)


def scale_case(plan: Plan, answer: Answer, hosting: Hosting) -> LiveCase:
    """The check of one architecture's answer, scaled to `hosting` where it must be.

    A `LoadTestError` when not even one replica's share of the plan fits this machine.
    """
    if answer.replicas is None:
        raise LoadTestError(f"the plan names no fleet for {answer.arch}: {answer.reason}")
    tools, notes = live_tools(plan)
    n, rate = answer.replicas, plan.workload.rate_per_s
    limits = {
        "replicas": hosting.max_replicas / n,
        "calls per second": hosting.max_rate_per_s / rate,
        "CPU": hosting.cpu_cores / max(cpu_cores_needed(plan, rate), 1e-9),
        "open calls": hosting.max_open_calls / max(open_calls(plan, rate), 1e-9),
    }
    scale = min(1.0, *limits.values())
    if scale >= 1.0:
        return LiveCase(answer.arch, n, answer.one_fewer, rate, 1.0, tools, notes)
    replicas = math.floor(n * scale + 1e-9)
    what = min(limits, key=lambda name: limits[name])
    if replicas < 1:
        raise LoadTestError(
            f"{answer.arch}: this machine cannot host one replica's share of the plan "
            f"({rate / n:.3g} calls/s, {cpu_cores_needed(plan, rate / n):.2f} CPU cores; "
            f"the limit reached: {what})"
        )
    scaled_rate = rate * replicas / n
    notes.append(
        f"scaled down for this machine ({what}): {replicas} replicas at {scaled_rate:.3g} "
        f"calls/s instead of {n} at {rate:.3g}, the same load per replica"
    )
    fewer = replicas - 1 if answer.one_fewer is not None and replicas > 1 else None
    if fewer is not None and answer.one_fewer is not None:
        notes.append(
            f"one fewer: {fewer} replicas carry {scaled_rate / fewer:.3g} calls/s each; the "
            f"plan's {answer.one_fewer} would carry {rate / answer.one_fewer:.3g}"
        )
    elif answer.one_fewer is not None:
        notes.append("one fewer: not run, the scaled fleet has one replica")
    return LiveCase(answer.arch, replicas, fewer, scaled_rate, replicas / n, tools, notes)


def warmup_s(plan: Plan) -> float:
    """Seconds before a run's calls are judged: long enough for the calls of users who
    never answer to reach their steady number (they hold until the answer timeout)."""
    work = plan.workload
    return WARMUP_S + (work.answer_timeout_s if work.never_answer_share > 0 else 0.0)


def live_config(plan: Plan, case: LiveCase, replicas: int, duration_s: float) -> LoadTestConfig:
    """The load test's settings that run the plan's workload on `replicas` replicas."""
    work = plan.workload
    tool_work = live_tool_work(plan)
    pooled = work.workers_per_replica > 1
    return LoadTestConfig(
        arch=case.arch,
        scenario="steady",
        replicas=replicas,
        rate_per_s=case.rate_per_s,
        duration_s=duration_s,
        think_time_median_s=work.think_time_median_s,
        think_time_sigma=work.think_time_sigma,
        never_answer_share=work.never_answer_share,
        answer_timeout_s=work.answer_timeout_s,
        tool_mix=dict(case.tools),
        tool_cpu_ms=tool_work.mean_ms,
        tool_cpu_cv=tool_work.cv,
        tool_cpu_kind=tool_work.kind,
        argument_bytes=argument_bytes(plan),
        max_connections=plan.slo.connection_limit,
        # One worker is the replica's event loop; more are its CPU pool, all tool work there.
        cpu_workers=work.workers_per_replica if pooled else None,
        cpu_inline_max_ms=0.0 if pooled else 1e6,
        max_retries=work.max_retries,
        retry_backoff_s=work.retry_backoff_s,
        # The model's backoff doubles without a cap until the client gives up.
        retry_backoff_max_s=work.retry_backoff_s * 2 ** max(work.max_retries, 1),
    )


def scenario_command(config: LoadTestConfig) -> str:
    """The `python -m loadtest scenario steady` command that runs `config` by hand: a flag
    for each setting that is not the load test's default (`server.flags.to_argv`)."""
    return "python -m loadtest scenario steady " + shlex.join(to_argv(config, skip=("scenario",)))

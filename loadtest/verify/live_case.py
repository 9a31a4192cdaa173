"""A plan's workload as the lab's live cluster runs it, scaled openly to what this machine
can host.

The lab's demo tools do little but ask, so where the plan's rounds carry work of their own
(the plan's round less the request's overhead its model split off) each tool of the plan
is played by the demo tool `rounds` in the tool's own shape, its rounds and the questions
each asks, spending that work in every round, which each call draws from the plan's
distribution (`loadtest.verify.played_tools`). A replica serves its rounds on one event
loop: one worker. A plan whose replica has more workers gets them from the replica's CPU
pool (`--cpu-workers`, all tool work off the loop).

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
from labsim.study.plan import Plan
from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.verify.hosting import Hosting
from loadtest.verify.plan_file import round_ms, tool_shares
from loadtest.verify.played_tools import own_round_work, played_mix, tool_specs, work_note
from server.flags import to_argv

#: Tool work per round below which the plan's demo tools are run as themselves (ms): the
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


@dataclass(frozen=True)
class RoundWork:
    """Server work per round a live tool spends: its mean (ms), spread (std / mean) and kind."""

    mean_ms: float
    cv: float
    kind: str


def argument_bytes(plan: Plan) -> int:
    """The size the live calls' text argument is padded to, so that their requests carry
    the plan's bytes per round: 0 for requests like the lab's own. The padding rides on
    every MRTR round (a retry sends its arguments again) and on a legacy call's first."""
    request_bytes = plan.params.workload.request_bytes
    extra = request_bytes - LAB_REQUEST_BYTES
    return round(extra) if request_bytes > PADDING_FROM * LAB_REQUEST_BYTES else 0


def overhead_ms(plan: Plan) -> float:
    """The request's own work in a round (ms), which the plan's model split off the round."""
    return plan.params.workload.request_overhead_s * 1e3


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


def live_tools(plan: Plan) -> tuple[dict[str, float], list[str]]:
    """The demo tools that play the plan's, with their shares, and what was mapped."""
    shares = tool_shares(plan)
    tool_work = live_tool_work(plan)
    own_tools = all(name in TOOLS for name in shares)
    if tool_work.mean_ms < NO_TOOL_WORK_MS and own_tools:
        return shares, []
    padding = argument_bytes(plan)
    if padding and own_tools:
        # The rounds' work is reading the documents the calls send: the tools play
        # themselves with arguments as large, and the replica reads them at its own speed.
        return shares, [
            f"the plan's requests carry {plan.params.workload.request_bytes:,.0f} bytes a "
            f"round: its tools play themselves, their text argument padded to {padding:,} "
            f"bytes; their {round_ms(plan):.3g} ms a round is reading it, at this machine's "
            "speed"
        ]
    if padding:
        raise LoadTestError(
            f"the plan's requests carry {plan.params.workload.request_bytes:,.0f} bytes a "
            "round, and only the lab's own tools that take a text argument send as many"
        )
    tools, played = played_mix(plan)
    notes = [
        f"tools played by the demo tool rounds in their own shape (rounds x questions a "
        f"round), spending the plan's tool work ({tool_work.mean_ms:.3g} ms a round beyond "
        f"the request's {overhead_ms(plan):.3g} ms): "
        + ", ".join(tool.describe() for tool in played)
    ]
    notes += [tool.note for tool in played if tool.note]
    if note := work_note(plan):
        notes.append(note)
    speed = plan.params.cluster.worker_speed
    if speed != 1.0:
        notes.append(
            f"a worker of {speed:g} vCPU played by a whole core working "
            f"1/{speed:g} as long on the tool's part"
        )
    return tools, notes


def cpu_cores_needed(plan: Plan, rate_per_s: float) -> float:
    """CPU cores the plan's rounds take here at `rate_per_s` calls a second: each round
    the request's work and the tools' own (a worker slower than a vCPU is played by a
    whole core working longer)."""
    shares, specs = tool_shares(plan), tool_specs(plan)
    total = sum(shares.values()) or 1.0
    rounds = sum(share * specs[tool].mean_requests() for tool, share in shares.items()) / total
    whole_ms = own_round_work(plan).mean_s * 1e3 + overhead_ms(plan)
    return rate_per_s * rounds * whole_ms / 1e3 / plan.params.cluster.worker_speed


def live_tool_work(plan: Plan) -> RoundWork:
    """The tool work per round a demo tool spends live: the plan's, or, for a worker
    slower than a vCPU (`worker_speed` < 1), as long as the whole round takes there, less
    the request's own work, which the live replica does at full speed."""
    tool = own_round_work(plan)
    tool_ms, speed, request_ms = (
        tool.mean_s * 1e3,
        plan.params.cluster.worker_speed,
        overhead_ms(plan),
    )
    if speed == 1.0:
        return RoundWork(tool_ms, tool.cv, tool.kind)
    mean_ms = (tool_ms + request_ms) / speed - request_ms
    std_ms = tool.cv * tool_ms / speed
    return RoundWork(mean_ms, std_ms / mean_ms if mean_ms > 0 else 0.0, tool.kind)


def open_calls(plan: Plan, rate_per_s: float) -> float:
    """Calls open at once at `rate_per_s` (Little's law): the users' think time, and the
    answer timeout of those who never answer."""
    request = plan.request
    think_mean_s = request.think_time_median_s * math.exp(request.think_time_sigma**2 / 2)
    never = request.never_answer_share
    return rate_per_s * ((1 - never) * think_mean_s + never * request.answer_timeout_s)


def scale_case(plan: Plan, arch: str, hosting: Hosting) -> LiveCase:
    """The check of architecture `arch`'s answer, scaled to `hosting` where it must be.

    A `LoadTestError` when not even one replica's share of the plan fits this machine.
    """
    answer = plan.architectures[arch]
    if answer.fleet is None:
        raise LoadTestError(f"the plan names no fleet for {arch}: {answer.reason}")
    one_fewer = None if answer.one_fewer is None else answer.one_fewer.replicas
    tools, notes = live_tools(plan)
    n, rate = answer.fleet.replicas, plan.request.rate_per_s
    limits = {
        "replicas": hosting.max_replicas / n,
        "calls per second": hosting.max_rate_per_s / rate,
        "CPU": hosting.cpu_cores / max(cpu_cores_needed(plan, rate), 1e-9),
        "open calls": hosting.max_open_calls / max(open_calls(plan, rate), 1e-9),
    }
    scale = min(1.0, *limits.values())
    if scale >= 1.0:
        return LiveCase(arch, n, one_fewer, rate, 1.0, tools, notes)
    replicas = math.floor(n * scale + 1e-9)
    what = min(limits, key=lambda name: limits[name])
    if replicas < 1:
        raise LoadTestError(
            f"{arch}: this machine cannot host one replica's share of the plan "
            f"({rate / n:.3g} calls/s, {cpu_cores_needed(plan, rate / n):.2f} CPU cores; "
            f"the limit reached: {what})"
        )
    scaled_rate = rate * replicas / n
    notes.append(
        f"scaled down for this machine ({what}): {replicas} replicas at {scaled_rate:.3g} "
        f"calls/s instead of {n} at {rate:.3g}, the same load per replica"
    )
    fewer = replicas - 1 if one_fewer is not None and replicas > 1 else None
    if fewer is not None and one_fewer is not None:
        notes.append(
            f"one fewer: {fewer} replicas carry {scaled_rate / fewer:.3g} calls/s each; the "
            f"plan's {one_fewer} would carry {rate / one_fewer:.3g}"
        )
    elif one_fewer is not None:
        notes.append("one fewer: not run, the scaled fleet has one replica")
    return LiveCase(arch, replicas, fewer, scaled_rate, replicas / n, tools, notes)


def warmup_s(plan: Plan) -> float:
    """Seconds before a run's calls are judged: long enough for the calls of users who
    never answer to reach their steady number (they hold until the answer timeout)."""
    request = plan.request
    return WARMUP_S + (request.answer_timeout_s if request.never_answer_share > 0 else 0.0)


def live_config(plan: Plan, case: LiveCase, replicas: int, duration_s: float) -> LoadTestConfig:
    """The load test's settings that run the plan's workload on `replicas` replicas."""
    request, client = plan.request, plan.params.client
    workers = plan.params.cluster.workers_per_replica
    tool_work = live_tool_work(plan)
    pooled = workers > 1
    return LoadTestConfig(
        arch=case.arch,
        scenario="steady",
        replicas=replicas,
        rate_per_s=case.rate_per_s,
        duration_s=duration_s,
        think_time_median_s=request.think_time_median_s,
        think_time_sigma=request.think_time_sigma,
        never_answer_share=request.never_answer_share,
        answer_timeout_s=request.answer_timeout_s,
        tool_mix=dict(case.tools),
        tool_cpu_ms=tool_work.mean_ms,
        tool_cpu_cv=tool_work.cv,
        tool_cpu_kind=tool_work.kind,
        argument_bytes=argument_bytes(plan),
        max_connections=request.connection_limit,
        # One worker is the replica's event loop; more are its CPU pool, all tool work there.
        cpu_workers=workers if pooled else None,
        cpu_inline_max_ms=0.0 if pooled else 1e6,
        max_retries=client.max_retries,
        retry_backoff_s=client.retry_backoff_s,
        # The model's backoff doubles without a cap until the client gives up.
        retry_backoff_max_s=client.retry_backoff_s * 2 ** max(client.max_retries, 1),
    )


def scenario_command(config: LoadTestConfig) -> str:
    """The `python -m loadtest scenario steady` command that runs `config` by hand: a flag
    for each setting that is not the load test's default (`server.flags.to_argv`)."""
    return "python -m loadtest scenario steady " + shlex.join(to_argv(config, skip=("scenario",)))

"""The simulated twin of a live scenario run: labsim's parameters for what a swarm did.

A live run (`loadtest.scenarios.run.run_scenario`) and a simulation can be put side by side
only if the simulation gets the same workload: the replicas, the think time, the demo
tools in the same mix, the users' sessions, the fault and its timing. Two figures it
cannot know in advance are calibrated from the run, and named as such: the server time
per round (from the measured latency of completed calls) and how long a replica took to
restart (from the fault log).

The swarm is a closed loop (each user starts its next call when the last one ends), the
simulation an open one (Poisson arrivals), so the arrival rate comes from Little's law:
users divided by the time one call takes, thinking included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import labsim
from labsim.model.tools import TOOLS, requests_per_call
from loadtest.config import LoadTestConfig
from loadtest.users.simulated_user import DUPLICATE_SHARE


def simulated_tool_mix(tool_mix: Mapping[str, float]) -> dict[str, float]:
    """The swarm's tool weights as shares of labsim's tools, one per path through a tool.

    labsim models a tool by its longest path; the swarm's users resolve
    `update_work_item` as a duplicate only in `DUPLICATE_SHARE` of calls, and the other
    calls ask one question in one round, as `get_weather` does, so that share goes to
    `get_weather`'s shape. A tool labsim does not model is an error, not a silent zero.
    """
    unknown = sorted(tool for tool in tool_mix if tool not in TOOLS)
    if unknown:
        raise ValueError(f"labsim does not model {', '.join(unknown)}; simulate without them")
    total = sum(tool_mix.values())
    if total <= 0:
        raise ValueError("the tool mix has no weight")
    shares: dict[str, float] = {}
    for tool, weight in tool_mix.items():
        share = weight / total
        if tool == "update_work_item":
            shares["get_weather"] = shares.get("get_weather", 0.0) + share * (1 - DUPLICATE_SHARE)
            share *= DUPLICATE_SHARE
        shares[tool] = shares.get(tool, 0.0) + share
    return shares


def think_stops_per_call(shares: Mapping[str, float], arch: str) -> float:
    """How often a user stops to think in a mean call.

    MRTR puts all the questions of a round in one `input_required`, so a user thinks
    once per asking round; the legacy protocol sends each question as its own request
    on the stream, so a user thinks once per question (as labsim's models do).
    """
    if arch == "mrtr":
        return sum(share * len(TOOLS[tool].rounds(1)) for tool, share in shares.items())
    return sum(share * TOOLS[tool].questions(1) for tool, share in shares.items())


@dataclass(frozen=True)
class TwinInputs:
    """What the simulated twin of one architecture's run is given beyond the configuration."""

    think_stops_per_call: float  # from the tool mix, as labsim's tools ask
    round_s: float  # calibrated: server time per round of a completed call
    restart_s: float  # calibrated: stop to ready of a replica, mean over the upgrade
    call_s: float  # one call, thinking included
    arrival_rate_per_s: float  # Little's law: users / call_s
    calls_per_session: float  # the run's calls per user: a user keeps one session


#: Stand-ins when an architecture did not run live here, of the order a live run gives
#: (`python -m loadtest scenario rolling-upgrade`: 5-15 ms per round, restarts near 1 s).
UNMEASURED_ROUND_S = 0.01
UNMEASURED_RESTART_S = 1.0


def twin_inputs(config: LoadTestConfig, summary: Mapping[str, Any] | None) -> TwinInputs:
    """The twin's inputs for `config`'s architecture, calibrated from `summary` if it ran."""
    shares = simulated_tool_mix(config.tool_mix)
    stops = think_stops_per_call(shares, config.arch)
    rounds = requests_per_call(tuple(shares), tuple(shares.values()))
    round_s, restart_s = UNMEASURED_ROUND_S, UNMEASURED_RESTART_S
    calls_per_session = 1.0
    if summary is not None:
        done = [c["latency_ms"] for c in summary["calls"] if c["outcome"] == "completed"]
        if done:
            round_s = sum(done) / len(done) / 1e3 / rounds
        stopped = {f["replica"]: f["t"] for f in summary["faults"] if f["event"] == "stop"}
        ready = {f["replica"]: f["t"] for f in summary["faults"] if f["event"] == "ready"}
        restarts = [ready[r] - stopped[r] for r in stopped if r in ready]
        if restarts:
            restart_s = sum(restarts) / len(restarts)
        calls_per_session = max(1.0, summary["started"] / config.users)
    mean_think_s = config.think_time_median_s * math.exp(config.think_time_sigma**2 / 2)
    call_s = stops * mean_think_s + rounds * round_s
    return TwinInputs(
        think_stops_per_call=stops,
        round_s=round_s,
        restart_s=restart_s,
        call_s=call_s,
        arrival_rate_per_s=config.users / call_s,
        calls_per_session=calls_per_session,
    )


def twin_params(config: LoadTestConfig, inputs: TwinInputs) -> labsim.SimParams:
    """labsim's parameters for a rolling-upgrade run of `config`, with `inputs` calibrated."""
    shares = simulated_tool_mix(config.tool_mix)
    return labsim.SimParams(
        workload=labsim.WorkloadParams(
            arrival_rate_per_s=inputs.arrival_rate_per_s,
            tools=tuple(shares),
            tool_mix=tuple(shares.values()),
            round_cpu=labsim.ServiceTime(mean_s=inputs.round_s),
            request_overhead_s=0.0,  # inside the calibrated time per round
            think_time_median_s=config.think_time_median_s,
            think_time_sigma=config.think_time_sigma,
            never_answer_share=0.0,
            calls_per_session=inputs.calls_per_session,
            session_s=config.duration_s,
        ),
        client=labsim.ClientParams(
            answer_timeout_s=config.answer_timeout_s,
            max_call_restarts=config.max_retries,
            cut_noticed_on_answer=True,  # the load test's client reads its stream between answers
        ),
        cluster=labsim.ClusterParams(replicas=config.replicas, workers_per_replica=1),
        faults=(
            labsim.RollingUpgrade(
                at_s=config.fault_at_s,
                drain_timeout_s=config.drain_timeout_s,
                restart_s=inputs.restart_s,
            ),
        ),
        horizon_s=config.duration_s,
        warmup_s=0.0,
        sample_every_s=1.0,
    )

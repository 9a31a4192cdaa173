"""One tool of any MCP server measured for the simulation:
`python -m loadtest measure --target URL --tool NAME [--era E] [--workload F]`.

For each protocol era asked for (`--era`: 2026-07-28 MRTR, 2025-11-25 legacy SSE, or
both the server speaks), one client calls the tool again and again, one call at a time,
with arguments drawn from the tool's `inputSchema` or a workload file (or fixed), and
answers every question at once as the target's users do (`loadtest.target.answers`: each
form valid under its own schema), and times each round: an MRTR round is one POST; a
legacy round runs from the POST that starts the call, or carries an answer, to the next
message on the call's stream. Between
the calls' stretches it times the cheapest request the era has (`server/discover`,
`ping`): the time on the wire and in the client.

What it can tell, it writes as a parameter file (`labsim/measured.json`'s format):

- `round_cpu`: the service time of a round, its spread and the kind that fits
  (`loadtest.calibration.round_fit`). With the server's process in sight (`--pid`, on this
  machine) its mean is the process's CPU per round (its background, measured idle, left
  out); otherwise it is a round's latency beyond the floor request's. Its spread is the
  rounds' latency spread beyond the floor's.
- `values`: bytes per round (request and response bodies), the floor request's latency
  as the time outside the replica per request, and, when memory can be seen (`--pid`, or
  `process_resident_memory_bytes` on the server's `/metrics`) and the legacy era asks a
  question, the memory one held call adds.
- `replica.base_memory_bytes`: the server's resident memory, warmed up and idle, where it
  can be seen.
- `tools`: the tool's own figures under its own name, era by era: rounds per call, the
  CPU of a round (mean, spread, kind) and bytes per round.

An era whose calls all fail is said (`details.failed_eras`, with the server's words) and
the other era's figures are kept; only when every era fails is nothing written.
Whatever it cannot see it leaves out; labsim keeps its own value and says so.
"""

from __future__ import annotations

import datetime
import json
import math
import statistics
from collections.abc import Callable
from typing import Any

import httpx

from loadtest.calibration.round_fit import RoundFit, from_outside, from_samples
from loadtest.calibration.tool_timing import Pacer, call_tool, time_floor
from loadtest.probes.held_memory import HeldTool, measure_held_calls, rss_bytes
from loadtest.probes.replica_cpu import children, process_cpu
from loadtest.target import Target, TargetError
from loadtest.target.reply_deadline import deadline_client
from loadtest.users.simulated_user import Answerer, lab_answer
from server.client import McpError
from server.protocol.versions import LEGACY_VERSION, MODERN_VERSION

#: The lab's name of each protocol era (as the parameter file's details key them).
ERA_NAMES = {MODERN_VERSION: "mrtr", LEGACY_VERSION: "legacy"}
ERAS = tuple(ERA_NAMES.values())
#: One call's arguments, drawn again for each call.
Arguments = Callable[[], dict[str, Any]]
#: The fewest held calls whose memory growth is read as one call's: fewer fit in memory
#: the warm-up's calls left free (25 calls of the lab's grew it by 1 KiB each, 200 by 25).
MIN_HELD_CALLS = 50

Progress = Callable[[str], None]


class Memory:
    """The server's resident memory, where this machine can see it: its process and its
    children (`pid`), or its `/metrics` (`process_resident_memory_bytes`)."""

    def __init__(self, url: str, pid: int | None, token: str | None) -> None:
        self.pid = pid
        self.metrics_url = url.rsplit("/", 1)[0] + "/metrics"
        self.token = token

    def read(self) -> int | None:
        if self.pid is not None:
            return sum(rss_bytes(p) for p in [self.pid, *children(self.pid)])
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            with deadline_client(5.0) as http:
                text = http.get(self.metrics_url, headers=headers).text
        except httpx.HTTPError:
            return None
        for line in text.splitlines():
            if line.startswith("process_resident_memory_bytes"):
                return self._bytes(line.split()[-1])
        return None

    def _bytes(self, figure: str) -> int:
        """The size a `/metrics` figure states; a `ValueError` saying the server's figure
        is no size (`+Inf`, `NaN`, negative, not a number)."""
        try:
            size = float(figure)
        except ValueError:
            size = math.nan
        if not (math.isfinite(size) and 0 <= size < 2**63):
            raise ValueError(
                f"{self.metrics_url}: process_resident_memory_bytes is {figure[:40]!r}, not a "
                "size in bytes (the server's /metrics is malformed)"
            )
        return int(size)


def measure_era(
    url: str,
    era: str,
    tool: str,
    arguments: Arguments,
    *,
    token: str | None,
    pid: int | None,
    calls: int,
    requests_per_s: float,
    progress: Progress,
    answer: Answerer = lab_answer,
) -> dict[str, Any]:
    """One era: its floor, the tool's rounds (and each round's CPU, with `pid`), the fit."""
    progress(f"{era}: warm-up, then {calls} calls of {tool} one at a time")
    pacer = Pacer(requests_per_s)
    warm_up = [(tool, arguments()) for _ in range(max(5, calls // 10))]
    call_tool(url, era, warm_up, token, pacer, answer=answer)
    floor = time_floor(url, era, token, calls, pacer)
    cpu = process_cpu(pid) if pid is not None else None
    timed = [(tool, arguments()) for _ in range(calls)]
    timings = call_tool(url, era, timed, token, pacer, cpu, answer=answer)
    if not timings.rounds_s or timings.failed == timings.calls:
        raise ValueError(
            f"{era}: no call of {tool} completed: {', '.join(sorted(set(timings.errors))[:3])}"
        )
    timings.floor_s = floor
    if timings.cpu_s:
        fit = from_samples(timings.cpu_s)
        source = "the process's CPU, round by round (schedstat)"
    else:
        fit = from_outside(timings.rounds_s, floor)
        source = "a round's latency beyond the floor request's (from outside)"
    return {
        "round": fit,
        "round_cpu_source": source,
        "calls": timings.calls,
        "failed": timings.failed,
        "errors": sorted(set(timings.errors))[:5],
        "rounds": len(timings.rounds_s),
        "rounds_per_call": len(timings.rounds_s) / max(timings.calls, 1),
        "round_latency_ms": _spread_ms(timings.rounds_s),
        "floor_latency_ms": _spread_ms(floor),
        "request_bytes": statistics.fmean(timings.request_bytes),
        "response_bytes": statistics.fmean(timings.response_bytes),
    }


def _spread_ms(values_s: list[float]) -> dict[str, float]:
    ordered = sorted(values_s)
    return {
        "mean": statistics.fmean(ordered) * 1e3,
        "p50": ordered[len(ordered) // 2] * 1e3,
        "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1e3,
        "std": statistics.pstdev(ordered) * 1e3,
    }


def measure_target(
    target: Target,
    tool: str,
    arguments: Arguments,
    *,
    era: str = "both",
    answer: Answerer = lab_answer,
    pid: int | None = None,
    calls: int = 200,
    held_calls: int = 100,
    requests_per_s: float = 50.0,
    command: str = "",
    progress: Progress = print,
) -> dict[str, Any]:
    """Measure `tool` of `target` in the eras `era` names (as its first user; held calls
    go round every user's token); the parameter file. An era that fails is said and the
    other's figures kept; a `TargetError` when none could be measured."""
    target.tool(tool)
    versions = target.eras_for(era)
    token = target.auth.token
    measured: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    for version in versions:
        try:
            measured[version] = measure_era(
                target.url,
                ERA_NAMES[version],
                tool,
                arguments,
                token=token,
                pid=pid,
                calls=calls,
                requests_per_s=requests_per_s,
                progress=progress,
                answer=answer,
            )
        except (ValueError, McpError, httpx.HTTPError) as error:
            failed[version] = str(error)
            progress(f"{version}: not measured: {error}")
    if not measured:
        said = "; ".join(f"{version}: {reason}" for version, reason in failed.items())
        raise TargetError(f"{tool} could not be measured in any era: {said}")
    first = next(iter(measured))
    main = measured[first]
    fit: RoundFit = main["round"]
    floor = main["floor_latency_ms"]
    values: dict[str, Any] = {
        "request_bytes": round(main["request_bytes"]),
        "response_bytes": round(main["response_bytes"]),
        "network_rtt_s": float(f"{floor['mean'] / 1e3:.3g}"),
        "network_rtt_cv": round(floor["std"] / floor["mean"], 3) if floor["mean"] else 0.0,
    }
    memory = Memory(target.url, pid, token)
    sample = arguments()
    document: dict[str, Any] = {
        "command": command,
        "measured_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "target": target.url,
        "values": values,
        "round_cpu": fit.as_round_cpu(),
        "tools": {tool: {version: tool_figures(found) for version, found in measured.items()}},
        "details": {
            "tool": tool,
            **_arguments_record(sample),
            "eras": {ERA_NAMES[v]: _plain(found) for v, found in measured.items()},
            "failed_eras": failed,
            "round_cpu_era": ERA_NAMES[first],
            "round_cpu_source": main["round_cpu_source"],
        },
    }
    base = memory.read()
    if base is not None:
        document["replica"] = {"base_memory_bytes": base}
    legacy = measured.get(LEGACY_VERSION)
    if legacy is not None and base is not None and legacy["rounds_per_call"] > 1:
        held = hold_calls(
            target.url, tool, sample, target.auth.tokens, pid, memory, held_calls, progress
        )
        document["details"]["held_calls"] = held
        if "rss_bytes_per_call" in held:
            values["held_call_bytes"] = round(held["rss_bytes_per_call"])
    return document


def tool_figures(found: dict[str, Any]) -> dict[str, Any]:
    """One tool's figures in one era, as the parameter file keeps them under its name:
    rounds per call, a round's CPU (mean in ms, spread, kind) and bytes per round."""
    fit: RoundFit = found["round"]
    round_cpu = fit.as_round_cpu()
    return {
        "rounds_per_call": round(found["rounds_per_call"], 3),
        "round_cpu": {
            "mean_ms": float(f"{fit.mean_s * 1e3:.3g}"),
            "cv": round_cpu["cv"],
            "kind": round_cpu["kind"],
        },
        "request_bytes_per_round": round(found["request_bytes"]),
        "response_bytes_per_round": round(found["response_bytes"]),
        "calls": found["calls"],
        "failed": found["failed"],
    }


#: Arguments longer than this (bytes of JSON) are recorded by their size alone.
ARGUMENTS_RECORDED_BYTES = 2048


def _arguments_record(arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's arguments as the file records them: whole, or a document's size alone."""
    size = len(json.dumps(arguments).encode())
    if size <= ARGUMENTS_RECORDED_BYTES:
        return {"arguments": arguments}
    return {"arguments_bytes": size}


def hold_calls(
    url: str,
    tool: str,
    arguments: dict[str, Any],
    tokens: tuple[str | None, ...],
    pid: int | None,
    memory: Memory,
    calls: int,
    progress: Progress,
) -> dict[str, Any]:
    """The memory one held legacy call of `tool` adds: `calls` held unanswered at once, or,
    where the server refuses that many from one caller (a cap per principal), half as
    many, down to `MIN_HELD_CALLS`; what went wrong, when nothing could be held."""
    failures = []
    while calls >= MIN_HELD_CALLS:
        progress(f"legacy: {calls} calls of {tool} held unanswered, memory read")
        try:
            return measure_held_calls(
                url,
                pid,
                calls,
                counted=False,
                tool=HeldTool(url=url, name=tool, arguments=arguments, tokens=tokens),
                rss=lambda: memory.read() or 0,
            )
        except (RuntimeError, TimeoutError, httpx.HTTPError, McpError) as error:
            failures.append(f"{calls} calls: {type(error).__name__}: {error}")
            calls //= 2
    return {"not_measured": failures}


def _plain(found: dict[str, Any]) -> dict[str, Any]:
    fit: RoundFit = found["round"]
    return {**found, "round": {**fit.as_round_cpu(), "method": fit.method, "cv_raw": fit.cv}}

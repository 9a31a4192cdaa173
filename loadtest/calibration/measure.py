"""Measured inputs for the simulation: `python -m loadtest measure --json labsim/measured.json`.

labsim's defaults should be this lab's own measurements, not guesses. On live replica
processes (real uvicorn, real HAProxy, real Redis for the store) this measures:

- `held_call_bytes`: resident memory one held legacy `get_weather` call adds to a replica
  (N calls held at once, memory store; the Redis store and the object-graph estimate are
  in `details`), see `loadtest/probes/held_memory.py`;
- `request_overhead_s`: replica CPU seconds per MRTR round over the load test's tool mix,
  fitted from the replica process's CPU time against rounds served across an idle, a light
  and a busy stretch (`loadtest/probes/replica_cpu.py`); the demo tools do no work of their own,
  so this is the whole CPU of a round;
- `seal_cpu_s`, `open_cpu_s`: sealing and opening a 1 KB requestState, in process;
- `request_bytes`, `response_bytes`: mean JSON-RPC body sizes per round over that mix;
- `network_rtt_s`, `network_rtt_cv`: per-round delay outside the replica's CPU (client,
  HAProxy, loopback), from one client's round latencies through the balancer with no
  queueing, minus the CPU per round: its mean and coefficient of variation.

And, for `labsim plan`: `round_cpu`, a round's service time over the mix (its CPU read
round by round from the scheduler's counts, one call at a time: mean, spread and the kind
that fits, `loadtest/calibration/round_fit.py`), and `replica.base_memory_bytes` (by
architecture in `base_memory_bytes_by_architecture`): the resident memory of a replica
that has served a hundred calls and holds none, its CPU workers' included.
"""

from __future__ import annotations

import datetime
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from loadtest.bench.microbench import seal_open_microbench
from loadtest.calibration.round_fit import RoundFit, from_samples
from loadtest.calibration.tool_timing import Pacer, Timings, call_tool
from loadtest.config import ARCHITECTURES, LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.probes.held_memory import measure_held_calls, rss_bytes
from loadtest.probes.replica_cpu import (
    CpuMeter,
    CpuStretch,
    children,
    fit_cpu_per_round,
    process_cpu,
)
from loadtest.users.flows import run_mrtr_flow
from loadtest.users.http_interface import HttpReply, Post
from loadtest.users.simulated_user import ThinkTime, tool_arguments

COMMAND = "python -m loadtest measure --json labsim/measured.json"
#: Client threads in the busy stretch (the light stretch has one, so nothing queues).
BUSY_THREADS = 4
#: Rounds timed one by one for the spread of a round's CPU, and how fast they are sent:
#: paced, so that each round's CPU is read alone (a replica's rate limit per principal is
#: 100 requests a second).
ROUNDS_TIMED = 400
PACED_PER_S = 50.0
#: Calls through a replica before its idle memory is read, and how long it idles first.
WARMUP_CALLS = 100
IDLE_S = 2.0


class RoundLog:
    """Every MRTR round a stretch sent: body sizes and latency, thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.request_bytes: list[int] = []
        self.response_bytes: list[int] = []
        self.latency_s: list[float] = []
        self.failed = 0

    def post(self, http: httpx.Client, url: str, auth: dict[str, str]) -> Post:
        """A `Post` for the flows, as the user `auth` names, that records each round."""

        def post(headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
            data = orjson.dumps(body)
            started = time.perf_counter()
            response = http.post(url, content=data, headers={**headers, **auth})
            elapsed = time.perf_counter() - started
            with self.lock:
                self.request_bytes.append(len(data))
                self.response_bytes.append(len(response.content))
                self.latency_s.append(elapsed)
            return HttpReply(response.status_code, None, orjson.loads(response.content))

        return post

    @property
    def rounds(self) -> int:
        return len(self.latency_s)


def drive(cluster: Cluster, tools: dict[str, float], threads: int, duration_s: float) -> RoundLog:
    """`threads` clients calling the tool mix back to back (no think time) for a while,
    each a principal of its own."""
    log = RoundLog()
    stop_at = time.monotonic() + duration_s

    def client(seed: int) -> None:
        rng = random.Random(seed)
        names, weights = list(tools), list(tools.values())
        with httpx.Client(timeout=30) as http:
            post = log.post(http, cluster.url, cluster.user_headers())
            while time.monotonic() < stop_at:
                tool = rng.choices(names, weights)[0]
                record = run_mrtr_flow(
                    post, tool, tool_arguments(tool, rng, 0), think=ThinkTime(0, 0, rng), rng=rng
                )
                if record.outcome != "completed":
                    with log.lock:
                        log.failed += 1

    workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(duration_s + 60)
    return log


def measure_rounds(stretch_s: float, progress: Callable[[str], None]) -> dict[str, Any]:
    """CPU per round, bytes per round and the network delay, on one MRTR replica + HAProxy."""
    config = LoadTestConfig(arch="mrtr", replicas=1, pin_cores=True)
    tools = config.tool_mix
    # Each client is a principal of its own, but calls without thinking: hundreds of rounds
    # a second, beyond a replica's default rate per principal. The bucket is kept (its cost
    # is part of a round's) at a rate no client reaches.
    unthrottled = {"requests_per_s_per_principal": 1e9}
    with Cluster(config, server_settings=unthrottled) as cluster:
        (replica,) = cluster.replicas.values()
        assert replica.pid is not None
        meter = CpuMeter([replica.pid])
        drive(cluster, tools, 1, min(stretch_s, 1.0))  # warm-up: imports, caches
        stretches: list[CpuStretch] = []
        progress(f"rounds: idle replica for {stretch_s:g} s")
        meter.start()
        time.sleep(stretch_s)
        stretches.append(meter.stop(0))
        # Warmed up and holding nothing: what a replica weighs before any held call.
        base_memory = rss_bytes(replica.pid)
        logs = []
        for threads in (1, BUSY_THREADS):
            progress(f"rounds: {threads} client(s) for {stretch_s:g} s")
            meter.start()
            logs.append(drive(cluster, tools, threads, stretch_s))
            stretches.append(meter.stop(logs[-1].rounds))
        progress(f"rounds: {ROUNDS_TIMED} rounds one at a time, each one's CPU read")
        timed = time_rounds(cluster, tools, replica.pid)
    per_round_s, idle_cpu = fit_cpu_per_round(stretches)
    light, busy = logs
    # One client, so nothing queues: what a round takes beyond the replica's CPU.
    delays = [max(lat - per_round_s, 0.0) for lat in light.latency_s]
    mean_delay = statistics.fmean(delays)
    every = light.request_bytes + busy.request_bytes, light.response_bytes + busy.response_bytes
    return {
        "cpu_per_round_s": per_round_s,
        "round": round_at_load(per_round_s, timed),
        "round_alone_s": statistics.fmean(timed.cpu_s),
        "rounds_timed": len(timed.cpu_s),
        "idle_cpu_per_s": idle_cpu,
        "base_memory_bytes": base_memory,
        "stretches": [vars(s) for s in stretches],
        "rounds_per_s": [s.rounds / s.span_s for s in stretches],
        "replica_utilization": [s.cpu_s / s.span_s for s in stretches],
        "failed_calls": light.failed + busy.failed,
        "tool_mix": tools,
        "request_bytes_mean": statistics.fmean(every[0]),
        "response_bytes_mean": statistics.fmean(every[1]),
        "round_latency_ms": {
            "p50": statistics.median(light.latency_s) * 1e3,
            "mean": statistics.fmean(light.latency_s) * 1e3,
        },
        "network_delay_s": {
            "mean": mean_delay,
            "cv": statistics.pstdev(delays) / mean_delay if mean_delay > 0 else 0.0,
            "samples": len(delays),
        },
    }


def round_at_load(cpu_per_round_s: float, timed: Timings) -> RoundFit:
    """A round of the mix as labsim takes it: the mean CPU per round fitted across the
    stretches under load, and the spread and kind of the rounds timed one at a time.

    A round alone costs more (0.58 ms against 0.19 ms on 2026-12-06: a replica woken for
    each request, its caches cold), so the mean is taken under load, as the plan's fleets
    run, and only the shape from the rounds alone."""
    alone = from_samples(timed.cpu_s)
    return RoundFit(
        cpu_per_round_s, alone.cv, alone.kind, "fit under load, spread alone", alone.samples
    )


def time_rounds(cluster: Cluster, tools: dict[str, float], pid: int) -> Timings:
    """Calls of the mix one at a time, paced, each round's CPU on the replica read from
    the scheduler's counts (`loadtest.calibration.tool_timing`)."""
    rng = random.Random(0)
    names, weights = list(tools), list(tools.values())
    calls: list[tuple[str, dict[str, Any]]] = []
    while len(calls) < ROUNDS_TIMED // 2:
        tool = rng.choices(names, weights)[0]
        calls.append((tool, tool_arguments(tool, rng, 0)))
    token = cluster.user_headers()["Authorization"].removeprefix("Bearer ")
    return call_tool(cluster.url, "mrtr", calls, token, Pacer(PACED_PER_S), process_cpu(pid))


def measure_base_memory(progress: Callable[[str], None]) -> dict[str, int]:
    """The resident memory of a warmed-up idle replica of each architecture (with its CPU
    workers, if any started): a replica alone, a hundred calls of the mix through it in
    its protocol era, then idle for `IDLE_S`."""
    found = {}
    for arch in ARCHITECTURES:
        progress(f"base memory: one {arch} replica, warmed up, then idle")
        config = LoadTestConfig(arch=arch, replicas=1)
        with Cluster(config, server_settings={"requests_per_s_per_principal": 1e9}) as cluster:
            (replica,) = cluster.replicas.values()
            assert replica.pid is not None
            rng = random.Random(0)
            names, weights = list(config.tool_mix), list(config.tool_mix.values())
            calls = []
            for _ in range(WARMUP_CALLS):
                tool = rng.choices(names, weights)[0]
                calls.append((tool, tool_arguments(tool, rng, 0)))
            era = "mrtr" if arch == "mrtr" else "legacy"
            token = cluster.user_headers()["Authorization"].removeprefix("Bearer ")
            call_tool(cluster.url, era, calls, token, Pacer(0.0))
            time.sleep(IDLE_S)
            found[arch] = sum(rss_bytes(pid) for pid in [replica.pid, *children(replica.pid)])
    return found


def measure_held(arch: str, calls: int, progress: Callable[[str], None]) -> dict[str, float]:
    """Memory per held legacy call on one replica of `arch` (sticky: memory, sse-store: Redis)."""
    progress(f"held calls: {calls} get_weather calls waiting on one {arch} replica")
    # The probe holds its calls as one principal, the replica's per-principal cap on held
    # calls lifted: a call's memory is what is measured, not how callers share them.
    lifted = {"max_held_calls_per_principal": 0}
    with Cluster(LoadTestConfig(arch=arch, replicas=1), server_settings=lifted) as cluster:
        (replica,) = cluster.replicas.values()
        assert replica.pid is not None
        return measure_held_calls(replica.base_url, replica.pid, calls)


def run_measure(
    *,
    held_calls: int = 200,
    stretch_s: float = 5.0,
    progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """Measure everything the simulation takes from the live server; the parameter file."""
    held = {arch: measure_held(arch, held_calls, progress) for arch in ("sticky", "sse-store")}
    rounds = measure_rounds(stretch_s, progress)
    by_architecture = measure_base_memory(progress)
    progress("requestState: seal and open of 1 KB, in process")
    state = seal_open_microbench(1024)
    return {
        "command": COMMAND,
        "measured_at": now(),
        "values": {
            "held_call_bytes": round(held["sticky"]["rss_bytes_per_call"]),
            "request_overhead_s": _figure(rounds["cpu_per_round_s"]),
            "seal_cpu_s": _figure(state["seal_us"] * 1e-6),
            "open_cpu_s": _figure(state["open_us"] * 1e-6),
            "request_bytes": round(rounds["request_bytes_mean"]),
            "response_bytes": round(rounds["response_bytes_mean"]),
            "network_rtt_s": _figure(rounds["network_delay_s"]["mean"]),
            "network_rtt_cv": _figure(rounds["network_delay_s"]["cv"]),
        },
        "round_cpu": rounds["round"].as_round_cpu(),
        "replica": {
            "base_memory_bytes": by_architecture["mrtr"],
            "base_memory_bytes_by_architecture": by_architecture,
        },
        "details": {
            "held_calls": held,
            "rounds": {**rounds, "round": vars(rounds["round"])},
            "request_state": state,
            "round_cpu_source": "the replica's CPU, round by round over the mix (schedstat), "
            "one call at a time",
        },
    }


def now() -> str:
    """This moment in UTC, as the parameter file writes it."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _figure(value: float) -> float:
    """Three significant figures: what the noise of one run leaves meaningful (params.py
    copies these literals)."""
    return float(f"{value:.3g}")

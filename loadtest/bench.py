"""Benchmarks, side by side in one run: the lab's server against its peers, every round kind.

The servers (`SERVERS`):

- `bare`: a bare Starlette endpoint (one route) that parses the body and answers JSON;
- `lab`: the lab's server;
- `sdk`: the same tools on the official Python SDK's `MCPServer` (it seals state itself);
- `ts`, `ts-hmac`: the same tools on the official TypeScript SDK v2 server, its per-request
  handler on Node 22, with requestState plain (its default) or under its HMAC codec;
- `lab-mypyc`, only when asked: the lab with its request path compiled by mypyc
  (`loadtest.compiled_lab`);
- `floor`, only when asked: the least a server can do to answer the rounds as the lab does,
  the lab's own sealing and nothing else (`loadtest.peers.floor`).

The Python servers run on the same uvicorn stack (uvloop, httptools), every server pinned
to core 0 and driven by `wrk` pinned to core 1, for each round kind of `loadtest.rounds`.
All servers stay up and each pass visits every server and round in turn, so a burst of load
elsewhere on the machine hits them alike; the report gives each one's median pass and the
spread of each ratio over the passes (ratios are taken within a pass). Microbenchmarks time
requestState against raw AES-GCM and one request through each ASGI app.

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
import subprocess
import sys
import time
from dataclasses import dataclass
from statistics import median
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from loadtest import compiled_lab
from loadtest.config import LoadTestError
from loadtest.microbench import (
    in_process_microbench,
    seal_open_microbench,
)
from loadtest.peers import typescript
from loadtest.rounds import KINDS, SHED_EVERY_UNITS, call_body, headers_for, rounds_for
from loadtest.rounds import check as check_rounds
from loadtest.wrk import run_wrk
from server.harness.process import ChildProcess, free_port, pinned, wait_until_healthy

STACK = ["--loop", "uvloop", "--http", "httptools"]
SERVERS = ("bare", "lab", "sdk", "ts", "ts-hmac")
#: Servers the bench runs only when asked (`--servers`): the lab compiled by mypyc, the floor.
OPTIONAL_SERVERS = ("lab-mypyc", "floor")
#: The lab sheds `crunch` after every unit, so its `shed` round is all requestState.
LAB_OPTIONS = ["--shed-every-units", str(SHED_EVERY_UNITS)]


@dataclass
class Target:
    """A server under test: how to start it and where its health is."""

    name: str
    command: list[str]
    health_path: str | None
    environment: dict[str, str]


def target(name: str, port: int) -> Target:
    """One of `SERVERS`, listening on 127.0.0.1:`port`."""
    uvicorn = [sys.executable, "-m", "uvicorn", "--port", str(port), "--log-level", "warning"]
    if name == "bare":
        return Target(name, [*uvicorn, *STACK, "loadtest.peers.bare:app"], None, {})
    if name in ("sdk", "floor"):
        return Target(name, [*uvicorn, *STACK, f"loadtest.peers.{name}:app"], None, {})
    if name in ("ts", "ts-hmac"):
        mode = "hmac" if name == "ts-hmac" else "plain"
        return Target(name, typescript.command(port, mode), None, typescript.environment())
    lab = [sys.executable, "-m", "server", "--port", str(port), *STACK, *LAB_OPTIONS]
    if name == "lab-mypyc":
        return Target(name, lab, "/healthz", compiled_lab.environment())
    return Target(name, lab, "/healthz", {})


def missing(name: str) -> str | None:
    """Why server `name` cannot run on this machine, or None."""
    if name == "lab-mypyc":
        return compiled_lab.missing()
    return typescript.missing() if name.startswith("ts") else None


class RunningTarget(ChildProcess):
    """A server under test, started and pinned to core 0, with its rounds checked."""

    def __init__(self, server: Target, port: int, *, start_timeout_s: float = 30) -> None:
        self.target = server
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.process = subprocess.Popen(
            pinned(server.command, "0"),
            env={**os.environ, "PYTHONWARNINGS": "ignore", **server.environment},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            _wait_for(self.url, server, self.process, start_timeout_s)
            self.rounds = rounds_for(self.url, ceiling=server.name == "bare")
            check_rounds(self.url, self.rounds)  # each round answers as it should
        except BaseException:
            self.stop()
            raise

    def cpu_s(self) -> tuple[float, float]:
        """CPU seconds the server process (every thread of it) has used so far: user, kernel."""
        assert self.process is not None
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        tick_s = 1 / os.sysconf("SC_CLK_TCK")
        return int(fields[11]) * tick_s, int(fields[12]) * tick_s

    def gc_collections(self) -> list[int] | None:
        """The lab's garbage collections so far by generation (0, 1, 2), from its /metrics.

        None for a server without /metrics. Read outside the CPU and wrk windows; the
        scrape's own allocations may add a collection to the next count (an upper bound).
        """
        if self.target.health_path is None:
            return None
        text = httpx.get(self.url.replace("/mcp", "/metrics"), timeout=10).text
        counts = [0, 0, 0]
        for family in text_string_to_metric_families(text):
            if family.name == "python_gc_collections":
                for sample in family.samples:
                    if sample.name.endswith("_total"):
                        counts[int(sample.labels["generation"])] = int(sample.value)
        return counts

    def timed(self, kind: str, *, duration_s: float, connections: int) -> dict[str, float]:
        """One wrk run of round `kind`, with the server's CPU time per request.

        CPU per request is what a server costs whatever else runs on the machine: where
        other work takes part of the core, req/s falls but CPU per request hardly moves.
        """
        collected_before = self.gc_collections()
        user_before, kernel_before = self.cpu_s()
        timed = self.rounds[kind]
        sample = run_wrk(self.url, timed, duration_s=duration_s, connections=connections)
        user_s, kernel_s = self.cpu_s()
        if collected_before is not None:
            after = self.gc_collections() or collected_before
            for gen, (a, b) in enumerate(zip(after, collected_before, strict=True)):
                sample[f"gc_collections_gen{gen}"] = float(a - b)
        per_request_us = 1e6 / sample["requests"]
        # The kernel's share (sockets, loopback TCP, epoll) apart from the process's own
        # user time: what a faster request path can cut is the user part.
        sample["user_us_per_request"] = (user_s - user_before) * per_request_us
        sample["kernel_us_per_request"] = (kernel_s - kernel_before) * per_request_us
        sample["cpu_us_per_request"] = (
            sample["user_us_per_request"] + sample["kernel_us_per_request"]
        )
        return sample


def _wait_for(url: str, server: Target, process: subprocess.Popen, timeout_s: float) -> None:
    if server.health_path:
        wait_until_healthy(url.replace("/mcp", server.health_path), timeout_s, process)
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{server.name} exited before it served")
        try:  # a POST: a GET may open an SSE stream that never ends
            httpx.post(url, json=call_body(0), headers=headers_for("get_weather"), timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise TimeoutError(f"{server.name} did not start")


#: Warm-up cycles (every round kind for a second each) at most, and the change in req/s
#: between two cycles under which a server counts as warm. Node's JIT needs several cycles
#: before it settles; the Python servers are steady after two.
WARM_UP_CYCLES = 8
WARM_WITHIN = 0.15


def warm_up(server: RunningTarget, connections: int) -> int:
    """Drive every round of `server` until its req/s settles; the number of cycles it took."""
    previous = None
    for cycle in range(1, WARM_UP_CYCLES + 1):
        total = sum(
            run_wrk(server.url, timed, duration_s=1, connections=connections)["requests_per_s"]
            for timed in server.rounds.values()
        )
        if previous is not None and abs(total - previous) <= WARM_WITHIN * previous:
            return cycle
        previous = total
    return WARM_UP_CYCLES


def bench_servers(
    names: tuple[str, ...], *, duration_s: float, connections: int, passes: int
) -> dict[str, dict[str, Any]]:
    """Every server and round kind, timed in interleaved passes; every pass kept."""
    running: list[RunningTarget] = []
    try:
        for name in names:
            port = free_port()
            running.append(RunningTarget(target(name, port), port))
        for r in running:
            warm_up(r, connections)
        report: dict[str, dict[str, Any]] = {r.target.name: {} for r in running}
        for n in range(passes):
            print(f"  pass {n + 1}/{passes}", file=sys.stderr, flush=True)
            for kind in KINDS:
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


def summarise(passes: dict[str, dict[str, list[dict[str, float]]]]) -> dict[str, Any]:
    """Medians, the lab's ratios to each peer (median and spread over passes) and tails."""
    servers = {
        name: {kind: {**_median_pass(s), "passes": s} for kind, s in kinds.items()}
        for name, kinds in passes.items()
    }
    ratios: dict[str, dict[str, float]] = {}
    for peer in passes:
        if peer == "lab":
            continue
        for kind in KINDS:
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
    for kind in KINDS:
        spread = {name: [s["p99_ms"] / s["p50_ms"] for s in passes[name][kind]] for name in passes}
        tails[kind] = {name: median(v) for name, v in spread.items()}
        if "bare" in spread:
            lab_over_bare = [
                lab / bare for lab, bare in zip(spread["lab"], spread["bare"], strict=True)
            ]
            tails[kind]["lab/bare"] = median(lab_over_bare)
    report = {"servers": servers, "ratios": ratios, "p99_over_p50": tails}
    if "floor" in passes and "bare" in passes:
        # What the state's work alone costs against bare, from the same passes.
        report["floor_over_bare"] = {
            kind: _spread(
                [
                    floor["requests_per_s"] / bare["requests_per_s"]
                    for floor, bare in zip(passes["floor"][kind], passes["bare"][kind], strict=True)
                ]
            )
            for kind in KINDS
        }
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
) -> dict[str, Any]:
    """The whole benchmark: servers side by side in interleaved passes, then microbenchmarks."""
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
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "stack": "uvicorn " + " ".join(STACK),
        "connections": connections,
        "duration_s": duration_s,
        "passes": passes,
        "missing": skipped,
    }
    print(f"benchmarking {', '.join(names)} ...", file=sys.stderr, flush=True)
    timed = bench_servers(names, duration_s=duration_s, connections=connections, passes=passes)
    report.update(summarise(timed))
    if micro:
        report["request_state"] = seal_open_microbench()
        report["in_process"] = in_process_microbench()
    return report

"""The servers the bench sets side by side, and each one running under test.

The servers (`SERVERS`):

- `bare`: a bare Starlette endpoint (one route) that parses the body and answers JSON;
- `lab`: the lab's server;
- `sdk`: the same tools on the official Python SDK's `MCPServer` (it seals state itself);
- `ts`, `ts-hmac`: the same tools on the official TypeScript SDK v2 server, its per-request
  handler on Node 22, with requestState plain (its default) or under its HMAC codec;
- `lab-mypyc`, only when asked: the lab with its request path compiled by mypyc
  (`loadtest.bench.compiled_lab`);
- `floor`, only when asked: the least a server can do to answer the rounds as the lab does,
  the lab's own sealing and nothing else (`loadtest.bench.peers.floor`).

The Python servers run on the same uvicorn stack (uvloop, httptools). A running target is
pinned to core 0, walked through its rounds once (`loadtest.bench.rounds`) and checked to
answer each as it should before anything is timed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from loadtest.bench import compiled_lab
from loadtest.bench.peers import typescript
from loadtest.bench.rounds import (
    BENCH_RATE_PER_S,
    SHED_EVERY_UNITS,
    call_body,
    headers_for,
    rounds_for,
)
from loadtest.bench.rounds import check as check_rounds
from loadtest.bench.wrk import run_wrk
from server.harness.process import ChildProcess, pinned, wait_until_healthy

STACK = ["--loop", "uvloop", "--http", "httptools"]
SERVERS = ("bare", "lab", "sdk", "ts", "ts-hmac")
#: Servers the bench runs only when asked (`--servers`): the lab compiled by mypyc, the floor.
OPTIONAL_SERVERS = ("lab-mypyc", "floor")
#: The lab sheds `crunch` after every unit, so its `shed` round is all requestState. wrk
#: sends every round as one principal, on many connections at once: its rate per principal
#: is raised past what wrk sends (`BENCH_RATE_PER_S`), and its cap on one principal's
#: CPU-heavy calls at once lifted (a `shed` round does one unit, but is a crunch call).
LAB_OPTIONS = [
    "--shed-every-units",
    str(SHED_EVERY_UNITS),
    "--rate-per-principal",
    str(BENCH_RATE_PER_S),
    "--max-cpu-calls-per-principal",
    "0",
]


@dataclass
class Target:
    """A server under test: how to start it and where its health is."""

    name: str
    command: list[str]
    health_path: str | None
    environment: dict[str, str]
    cwd: Path | None = None  # where it starts: another commit's tree, or here


def target(name: str, port: int) -> Target:
    """One of `SERVERS`, listening on 127.0.0.1:`port`."""
    uvicorn = [sys.executable, "-m", "uvicorn", "--port", str(port), "--log-level", "warning"]
    if name == "bare":
        return Target(name, [*uvicorn, *STACK, "loadtest.bench.peers.bare:app"], None, {})
    if name in ("sdk", "floor"):
        return Target(name, [*uvicorn, *STACK, f"loadtest.bench.peers.{name}:app"], None, {})
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
            cwd=server.cwd,
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

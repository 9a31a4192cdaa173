"""Benchmarks, side by side in one run: the lab's server against its peers.

Each server (the bare Starlette ceiling, the lab's server, the official SDK's server) is
started alone, on the same uvicorn stack (pinned event loop and HTTP parser), pinned to
one core, and driven by `wrk` pinned to the other core, for the first MRTR round (the
server answers `input_required` and seals requestState) and for the completing retry
(the server opens the state). The report gives requests/s, p50 and p99 latency, and the
ratios lab/bare and lab/sdk, measured in the same run. Microbenchmarks time requestState
seal and open, and the in-process cost of one request through each ASGI app.

Numbers are only comparable within one run: this machine is shared and noisy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from loadtest.microbench import in_process_microbench, print_state_report, seal_open_microbench
from loadtest.rounds import HEADERS, call_body, round_bodies
from server.harness.process import ChildProcess, free_port, pinned, wait_until_healthy

STACK = ["--loop", "uvloop", "--http", "httptools"]


@dataclass
class Target:
    """A server under test: how to start it and where its health is."""

    name: str
    command: list[str]
    health_path: str | None


SERVERS = ("bare", "lab", "sdk")


def target(name: str, port: int) -> Target:
    """One of the three servers, listening on `port`."""
    uvicorn = [sys.executable, "-m", "uvicorn", "--port", str(port), "--log-level", "warning"]
    if name == "bare":
        return Target(name, [*uvicorn, *STACK, "loadtest.peers.bare:app"], None)
    if name == "sdk":
        return Target(name, [*uvicorn, *STACK, "loadtest.peers.sdk:app"], None)
    return Target(name, [sys.executable, "-m", "server", "--port", str(port), *STACK], "/healthz")


def lua_script(body: dict[str, Any]) -> str:
    """A wrk script that POSTs `body` with the 2026-07-28 headers."""
    lines = ['wrk.method = "POST"']
    lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in HEADERS.items()]
    lines.append(f"wrk.body = {json.dumps(json.dumps(body, separators=(',', ':')))}")
    return "\n".join(lines) + "\n"


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse_wrk(output: str) -> dict[str, float]:
    """Requests/s, p50 and p99 (ms) and errors from `wrk --latency` output."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    latency = {}
    for pct in ("50", "99"):
        value, unit = re.search(rf"\s{pct}%\s+([\d.]+)(us|ms|s)", output).groups()
        latency[pct] = float(value) * _UNITS[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "requests_per_s": rps,
        "p50_ms": latency["50"],
        "p99_ms": latency["99"],
        "non_2xx": int(errors.group(1)) if errors else 0,
    }


def run_wrk(url: str, body: dict[str, Any], *, duration_s: float, connections: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua_script(body))
    try:
        command = [
            "wrk", "-t1", f"-c{connections}", f"-d{max(1, round(duration_s))}s", "--latency",
            "-s", script.name, url,
        ]  # fmt: skip
        out = subprocess.run(
            pinned(command, "1"), capture_output=True, text=True, timeout=duration_s + 60
        )
    finally:
        Path(script.name).unlink()
    if out.returncode != 0:
        raise RuntimeError(f"wrk failed: {out.stderr.strip()}")
    return parse_wrk(out.stdout)


class RunningTarget(ChildProcess):
    """A server under test, started and pinned to core 0, with its two request bodies."""

    def __init__(self, server: Target, port: int) -> None:
        self.target = server
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.process = subprocess.Popen(
            pinned(server.command, "0"),
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            _wait_for(self.url, server, self.process)
            self.bodies = dict(zip(("round1", "retry"), round_bodies(self.url), strict=True))
            # Check each round answers as it should before timing it.
            self.result_types = [_result_type(self.url, b) for b in self.bodies.values()]
        except BaseException:
            self.stop()
            raise


def bench_servers(*, duration_s: float, connections: int, passes: int) -> dict[str, dict[str, Any]]:
    """Every server and round, timed in interleaved passes; the median pass of each.

    Idle servers cost nothing, so all three stay up and each pass visits each of them in
    turn: a burst of load elsewhere on the machine hits every server alike.
    """
    running: list[RunningTarget] = []
    try:
        for name in SERVERS:
            port = free_port()
            running.append(RunningTarget(target(name, port), port))
        samples: dict[tuple[str, str], list[dict[str, float]]] = {}
        for r in running:  # warm-up
            for body in r.bodies.values():
                run_wrk(r.url, body, duration_s=1, connections=connections)
        for n in range(passes):
            print(f"  pass {n + 1}/{passes}", file=sys.stderr, flush=True)
            for r in running:
                for label, body in r.bodies.items():
                    sample = run_wrk(r.url, body, duration_s=duration_s, connections=connections)
                    samples.setdefault((r.target.name, label), []).append(sample)
        report: dict[str, dict[str, Any]] = {}
        for r in running:
            entry: dict[str, Any] = {"result_types": r.result_types}
            for label in r.bodies:
                runs = sorted(samples[(r.target.name, label)], key=lambda x: x["requests_per_s"])
                entry[label] = {**runs[len(runs) // 2], "passes": runs}
            report[r.target.name] = entry
        return report
    finally:
        for r in running:
            r.stop()


def _wait_for(url: str, target: Target, process: subprocess.Popen) -> None:
    if target.health_path:
        wait_until_healthy(url.replace("/mcp", target.health_path), 30, process)
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{target.name} exited before it served")
        try:
            httpx.post(url, json=call_body(0), headers=HEADERS, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise TimeoutError(f"{target.name} did not start")


def _result_type(url: str, body: dict[str, Any]) -> str:
    reply = httpx.post(url, json=body, headers=HEADERS, timeout=10).json()
    return (reply.get("result") or {}).get("resultType", "error")


def run_bench(*, duration_s: float = 3.0, connections: int = 10, passes: int = 3) -> dict[str, Any]:
    """The whole benchmark: servers side by side in interleaved passes, then microbenchmarks."""
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (make setup installs it)")
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "stack": "uvicorn " + " ".join(STACK),
        "connections": connections,
        "duration_s": duration_s,
        "passes": passes,
    }
    print("benchmarking bare, lab and sdk ...", file=sys.stderr, flush=True)
    report["servers"] = bench_servers(duration_s=duration_s, connections=connections, passes=passes)
    servers = report["servers"]
    report["ratios"] = {
        f"lab/{peer}_{label}": servers["lab"][label]["requests_per_s"]
        / servers[peer][label]["requests_per_s"]
        for peer in ("bare", "sdk")
        for label in ("round1", "retry")
    }
    # The tail of every server, so a tail the machine causes shows up on all of them.
    report["p99_over_p50"] = {
        f"{name}_{label}": servers[name][label]["p99_ms"] / servers[name][label]["p50_ms"]
        for name in SERVERS
        for label in ("round1", "retry")
    }
    report["request_state"] = seal_open_microbench()
    report["in_process"] = in_process_microbench()
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"stack: {report['stack']}, wrk -t1 -c{report['connections']}, pinned cores")
    print(f"{'server':<6} {'round':<7} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}  result")
    for name, s in report["servers"].items():
        for i, label in enumerate(("round1", "retry")):
            r = s[label]
            print(
                f"{name:<6} {label:<7} {r['requests_per_s']:>9.0f} {r['p50_ms']:>8.2f} "
                f"{r['p99_ms']:>8.2f}  {s['result_types'][i]}"
            )
    print("ratios: " + ", ".join(f"{k} {v:.2f}x" for k, v in report["ratios"].items()))
    print("p99/p50: " + ", ".join(f"{k} {v:.1f}" for k, v in report["p99_over_p50"].items()))
    print_state_report(report["request_state"])
    ip = report["in_process"]
    print(
        f"in-process ASGI request: bare {ip['bare_round1_us']:.1f} us, lab "
        f"{ip['lab_round1_us']:.1f} us (lab's own work {ip['lab_overhead_us']:.1f} us)"
    )

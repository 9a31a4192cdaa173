"""The memory a waiting 2025-11-25 call holds: the lab's legacy mode beside the official SDK's.

The baseline MRTR is judged against should not be a strawman, so the lab's legacy mode is
set beside the Python SDK's own 2025-11-25 server (`loadtest.bench.peers.sdk_legacy`) holding
the same elicitation: N `get_weather` calls opened against each, all waiting at their
question, and the growth of each process's resident memory per call (see
`loadtest.probes.held_memory`). Both run one process on the same uvicorn stack.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import Any

from loadtest.probes.held_memory import measure_held_calls
from server.harness.process import ChildProcess, free_port, wait_until_healthy

STACK = ["--loop", "uvloop", "--http", "httptools"]


class HeldServer(ChildProcess):
    """The lab's server (legacy memory store) or the SDK's 2025-11-25 server, started alone."""

    def __init__(self, name: str) -> None:
        self.name = name
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        if name == "lab":
            # One principal holds every measured call, the per-principal cap lifted: what a
            # held call weighs is measured, as on the SDK's server, which has no cap.
            uncapped = ["--max-held-calls-per-principal", "0"]
            command = [sys.executable, "-m", "server", "--port", str(port), *STACK, *uncapped]
        else:
            command = [
                sys.executable, "-m", "uvicorn", "--port", str(port), "--log-level", "warning",
                *STACK, "loadtest.bench.peers.sdk_legacy:app",
            ]  # fmt: skip
        self.process = subprocess.Popen(
            command,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            if name == "lab":
                wait_until_healthy(f"{self.base_url}/healthz", 30, self.process)
            else:
                _wait_for_port(port, self.process)
        except BaseException:
            self.stop()
            raise


def _wait_for_port(port: int, process: subprocess.Popen, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited before it listened")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listened on port {port}")


def compare_held(calls: int = 200) -> dict[str, Any]:
    """Memory per waiting call on the lab and on the SDK's server, and their ratio."""
    report: dict[str, Any] = {"calls": calls}
    for name in ("lab", "sdk"):
        print(f"held calls: {calls} on {name}", file=sys.stderr, flush=True)
        server = HeldServer(name)
        try:
            assert server.process is not None
            report[name] = measure_held_calls(
                server.base_url, server.process.pid, calls, counted=name == "lab"
            )
        finally:
            server.stop()
    report["lab/sdk"] = report["lab"]["rss_bytes_per_call"] / report["sdk"]["rss_bytes_per_call"]
    return report


def print_held(report: dict[str, Any]) -> None:
    lab, sdk = report["lab"], report["sdk"]
    print(
        f"a waiting 2025-11-25 call ({report['calls']} get_weather calls held at their "
        f"question), resident memory per call: lab {lab['rss_bytes_per_call'] / 1024:.1f} KiB "
        f"(object graph {lab['object_graph_bytes_per_call'] / 1024:.1f} KiB), Python SDK "
        f"{sdk['rss_bytes_per_call'] / 1024:.1f} KiB; lab/sdk {report['lab/sdk']:.2f}x"
    )

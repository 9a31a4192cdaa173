"""A soak against connection exhaustion: idle sockets beside a swarm of real calls.

One replica in a child process; `idle` sockets that connect and never send a byte (more
than the usual 1,024 open-file soft limit, the attack the hardening answers); then
`clients` threads, each running whole MRTR `get_weather` calls (two rounds) for
`duration_s`. The report says how many calls completed and failed, how long they took,
and how many idle sockets the replica itself closed. Then, idle sockets still open, one
principal tries to hold `held_attempts` legacy calls against its limit
(`loadtest.probes.held_per_principal`): what it holds, and the memory that takes, stop there.
A benchmark that prints figures, not a timed test.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from loadtest.probes.held_per_principal import hoard
from server.client import Handlers, McpError, MrtrClient, accept
from server.harness.process import ServerProcess, raise_file_limit


@dataclass
class SoakReport:
    """What a soak measured."""

    idle_sockets: int
    idle_closed_by_server: int
    clients: int
    duration_s: float
    completed: int = 0
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    #: `--max-held-calls-per-principal` of the replica, and what one principal held.
    held_limit: int = 0
    held: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        ordered = sorted(self.latencies_ms) or [0.0]
        return {
            "idle_sockets": self.idle_sockets,
            "idle_closed_by_server": self.idle_closed_by_server,
            "clients": self.clients,
            "duration_s": self.duration_s,
            "completed": self.completed,
            "failed": self.failed,
            "errors": self.errors,
            "call_ms_p50": round(statistics.median(ordered), 2),
            "call_ms_p99": round(ordered[int(0.99 * (len(ordered) - 1))], 2),
            "held_limit": self.held_limit,
            "held": self.held,
        }


def _swarm(url: str, clients: int, duration_s: float, report: SoakReport) -> None:
    lock = threading.Lock()
    deadline = time.monotonic() + duration_s

    def user() -> None:
        handlers = Handlers(elicit=lambda params: accept(name="soak"))
        with MrtrClient(url, handlers=handlers) as client:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    client.call_tool("get_weather", {"location": "Oslo"})
                except (McpError, OSError) as exc:
                    with lock:
                        report.failed += 1
                        name = type(exc).__name__
                        report.errors[name] = report.errors.get(name, 0) + 1
                    continue
                with lock:
                    report.completed += 1
                    report.latencies_ms.append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=user) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _closed_by_peer(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _token(principal: str, env: dict[str, str]) -> str:
    """A bearer token for `principal`, minted by the server's own command line."""
    command = [sys.executable, "-m", "server", "token", principal]
    return subprocess.run(
        command, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def run_soak(
    *, idle: int, clients: int, duration_s: float, held_attempts: int = 0, held_limit: int = 20
) -> SoakReport:
    """Start a replica, open `idle` idle sockets, run the swarm, then let one principal
    hoard `held_attempts` legacy calls against `held_limit`; stop everything."""
    env = {
        **os.environ,
        "MRTR_STATE_KEYS": "soak:" + base64.b64encode(secrets.token_bytes(32)).decode(),
        "MRTR_JWT_SECRET": secrets.token_urlsafe(32),
    }
    # A header timeout longer than the run keeps the idle sockets open throughout: the
    # soak measures the worst case, sockets that are reopened as soon as they are closed.
    connections = idle + 4 * clients + 2 * held_attempts + 64
    args = [
        "--max-connections",
        str(connections),
        "--header-timeout-s",
        str(duration_s + 60),
        "--max-held-calls-per-principal",
        str(held_limit),
    ]
    replica = ServerProcess(args=args, env=env)
    replica.start()
    raise_file_limit(connections)  # this process opens the sockets
    sockets: list[socket.socket] = []
    try:
        for _ in range(idle):
            sockets.append(socket.create_connection(("127.0.0.1", replica.port), timeout=5))
        report = SoakReport(idle, 0, clients, duration_s, held_limit=held_limit)
        _swarm(replica.url, clients, duration_s, report)
        if held_attempts:
            assert replica.pid is not None
            tokens = (_token("hoarder", env), _token("other", env))
            report.held = hoard(replica.base_url, replica.pid, tokens, held_attempts)
        report.idle_closed_by_server = sum(_closed_by_peer(s) for s in sockets)
        return report
    finally:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
        replica.stop()


def print_soak(report: SoakReport) -> None:
    figures = report.as_dict()
    print(
        f"soak: {figures['idle_sockets']} idle sockets, {figures['clients']} clients, "
        f"{figures['duration_s']:g} s"
    )
    print(
        f"calls completed {figures['completed']}, failed {figures['failed']} "
        f"{figures['errors'] or ''}".rstrip()
    )
    print(f"call p50 {figures['call_ms_p50']} ms, p99 {figures['call_ms_p99']} ms")
    print(f"idle sockets the replica closed itself: {figures['idle_closed_by_server']}")
    held = figures["held"]
    if held:
        limit = figures["held_limit"] or "none"
        print(
            f"one principal tried to hold {held['attempts']} legacy calls (limit {limit}): "
            f"held {held['held']}, refused {held['refused']} (HTTP {held['refused_statuses']})"
        )
        print(f"another principal's call then held: {held['other_principal_held']}")
        print(
            f"memory of its held calls: {held['waiting_memory_bytes'] / 1024:.0f} KiB "
            f"(object graph), replica RSS +{held['rss_growth_bytes'] / 1024:.0f} KiB"
        )
        # The clients call flat out, one anonymous principal, hundreds of rounds a second:
        # the rate per principal is raised past it, so the soak counts the replica's calls
        # beside idle sockets, not its throttle.
        "--rate-per-principal",
        "1e9",

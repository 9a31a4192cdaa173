"""Soaks: legitimate calls beside an attack on availability. Is every call served?

Against connection exhaustion (`run_soak`): one replica in a child process; `idle`
sockets that connect and never send a byte (more than the usual 1,024 open-file soft
limit, the attack the hardening answers); then `clients` threads, each running whole
MRTR `get_weather` calls (two rounds) for `duration_s`. The report says how many calls
completed and failed, how long they took, and how many idle sockets the replica itself
closed. Then, idle sockets still open, one principal tries to hold `held_attempts` legacy
calls against its limit (`loadtest.probes.held_per_principal`): what it holds, and the
memory that takes, stop there.

Under attack (`run_attack_soak`): a cluster (two replicas behind HAProxy, a Redis task
store), legitimate users each with a principal of their own running whole MRTR calls
through HAProxy, first quiet, then beside each attack of `loadtest.soak.attacks` in
turn (bounded in seconds and sockets). Each phase reports the calls served and failed,
their p50 and p95, the p95 against the quiet phase's, and how often HAProxy marked a
replica down; side by side.

Benchmarks that print figures, not timed tests.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.probes.held_per_principal import hoard
from loadtest.soak.attacks import ATTACKER_NICE, DEFAULT_SOCKETS, AttackProcess
from loadtest.soak.lab_door import LabDoor
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


#: The legitimate users' calls, in turn: a question each, and quote's few milliseconds of
#: CPU (on the loop, as small work stays).
LEGITIMATE_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("get_weather", {"location": "Oslo"}),
    ("quote", {"cpu_ms": 2}),
)


class Tally(Protocol):
    """Where a swarm counts its calls."""

    completed: int
    failed: int
    errors: dict[str, int]
    latencies_ms: list[float]


def _swarm(
    url: str,
    clients: int,
    duration_s: float,
    report: Tally,
    *,
    tokens: list[str | None] | None = None,
    calls: tuple[tuple[str, dict[str, Any]], ...] = LEGITIMATE_CALLS[:1],
    pause_s: float = 0.0,
) -> None:
    """`clients` users calling `calls` in turn for `duration_s` (each with its token, if
    given), `pause_s` between calls; every call counted in `report`."""
    lock = threading.Lock()
    deadline = time.monotonic() + duration_s

    def user(token: str | None) -> None:
        handlers = Handlers(elicit=lambda params: accept(name="soak"))
        with MrtrClient(url, handlers=handlers, token=token) as client:
            for turn in itertools.count():
                if time.monotonic() >= deadline:
                    break
                tool, arguments = calls[turn % len(calls)]
                started = time.perf_counter()
                try:
                    client.call_tool(tool, arguments)
                except (McpError, OSError, httpx.HTTPError) as exc:
                    name = (
                        f"HTTP {exc.http_status}"
                        if isinstance(exc, McpError) and exc.http_status
                        else type(exc).__name__
                    )
                    with lock:
                        report.failed += 1
                        report.errors[name] = report.errors.get(name, 0) + 1
                else:
                    with lock:
                        report.completed += 1
                        report.latencies_ms.append((time.perf_counter() - started) * 1000)
                time.sleep(pause_s)

    threads = [
        threading.Thread(target=user, args=((tokens or [None] * clients)[i],))
        for i in range(clients)
    ]
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
        # The clients call flat out, one anonymous principal, hundreds of rounds a second:
        # the rate per principal is raised past it, so the soak counts the replica's calls
        # beside idle sockets, not its throttle.
        "--rate-per-principal",
        "1e9",
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


@dataclass
class Phase:
    """The legitimate users' calls over one phase of an attack soak: quiet, or one attack."""

    name: str
    completed: int = 0
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    #: Times HAProxy marked a replica down during the phase (its `chkdown` counts).
    marked_down: int = 0
    #: What the attack did (`AttackReport.as_dict`); None for the quiet phase.
    attack: dict[str, Any] | None = None

    def percentile_ms(self, share: float) -> float:
        ordered = sorted(self.latencies_ms) or [0.0]
        return ordered[round(share * (len(ordered) - 1))]

    def as_dict(self, quiet_p95_ms: float) -> dict[str, Any]:
        p95 = self.percentile_ms(0.95)
        return {
            "phase": self.name,
            "completed": self.completed,
            "failed": self.failed,
            "errors": self.errors,
            "call_ms_p50": round(self.percentile_ms(0.5), 2),
            "call_ms_p95": round(p95, 2),
            "p95_vs_quiet": round(p95 / quiet_p95_ms, 2) if quiet_p95_ms else None,
            "replicas_marked_down": self.marked_down,
            "attack": self.attack,
        }


@dataclass
class AttackSoakReport:
    """An attack soak: the quiet phase first, then one phase per attack."""

    users: int
    duration_s: float
    #: The attacker's CPU priority (niceness) it ran at.
    attacker_nice: int = 0
    phases: list[Phase] = field(default_factory=list)

    @property
    def failed(self) -> int:
        """Legitimate calls that failed, over every phase."""
        return sum(phase.failed for phase in self.phases)

    def as_dict(self) -> dict[str, Any]:
        quiet = self.phases[0].percentile_ms(0.95) if self.phases else 0.0
        return {
            "users": self.users,
            "duration_s": self.duration_s,
            "attacker_nice": self.attacker_nice,
            "phases": [phase.as_dict(quiet) for phase in self.phases],
        }


#: Seconds an attack runs before the legitimate users of its phase start, so that they
#: meet it in full (every slow body open, the first wave sent, the CPU busy).
ATTACK_RAMP_S = 1.0


def run_attack_soak(
    attacks: list[str],
    *,
    users: int = 8,
    duration_s: float = 10.0,
    sockets: dict[str, int] | None = None,
    pause_s: float = 0.02,
    attacker_nice: int = ATTACKER_NICE,
) -> AttackSoakReport:
    """Start a cluster; its users quiet for `duration_s`, then beside each attack in turn
    (with `sockets` of it, by default the sizes that took a replica down; its process at
    CPU priority `attacker_nice`); stop everything."""
    sizes = {**DEFAULT_SOCKETS, **(sockets or {})}
    config = LoadTestConfig(
        arch="mrtr", replicas=2, tool_mix={"get_weather": 1.0, "provision_vm": 1.0}
    )
    report = AttackSoakReport(users, duration_s, attacker_nice)
    with Cluster(config) as cluster:
        tokens: list[str | None] = [
            cluster.user_headers()["Authorization"].removeprefix("Bearer ") for _ in range(users)
        ]
        for name in ["quiet", *attacks]:
            phase = Phase(name)
            attack = None
            # The forgeries' target is the Lab tab over this cluster, the others' the cluster.
            door = LabDoor(cluster) if name == "cross-origin-lab" else None
            with door or contextlib.nullcontext():
                if name != "quiet":
                    attack = AttackProcess(
                        name,
                        "127.0.0.1",
                        door.port if door else cluster.lb_port,
                        seconds=ATTACK_RAMP_S + duration_s,
                        sockets=sizes[name],
                        secret=cluster.jwt_secret,
                        nice=attacker_nice,
                    )
                    attack.wait_ready()
                    time.sleep(ATTACK_RAMP_S)
                down_before = _marked_down(cluster)
                _swarm(
                    cluster.url,
                    users,
                    duration_s,
                    phase,
                    tokens=tokens,
                    calls=LEGITIMATE_CALLS,
                    pause_s=pause_s,
                )
                phase.marked_down = _marked_down(cluster) - down_before
                if attack is not None:
                    phase.attack = attack.join()
            report.phases.append(phase)
    return report


def _marked_down(cluster: Cluster) -> int:
    """Times HAProxy has marked any replica down so far."""
    return sum(int(row.get("chkdown") or 0) for row in cluster.api.server_stats().values())


def print_attack_soak(report: AttackSoakReport) -> None:
    """The phases side by side: legitimate calls served, failed, p50, p95, p95 vs quiet."""
    print(
        f"attack soak: {report.users} legitimate users through HAProxy (two replicas), "
        f"{report.duration_s:g} s per phase; the attacker at niceness {report.attacker_nice}"
        + (" (the lowest CPU priority, as on a machine of its own)" if report.attacker_nice else "")
    )
    print(
        f"{'phase':16} {'served':>7} {'failed':>7} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'p95/quiet':>9} {'marked down':>11} {'its cores':>9}  "
        "attack (sent: the cluster's answers)"
    )
    for row in report.as_dict()["phases"]:
        attack = row["attack"]
        what = (
            f"{attack['sent']}: "
            + ", ".join(f"{status} x{count}" for status, count in attack["answers"].items())
            if attack
            else ""
        )
        ratio = f"{row['p95_vs_quiet']:.2f}" if row["p95_vs_quiet"] is not None else "-"
        # The attacker's own CPU, in cores over its run: on one machine, the users' cores.
        cores = f"{attack['cpu_s'] / attack['seconds']:.2f}" if attack else "-"
        print(
            f"{row['phase']:16} {row['completed']:>7} {row['failed']:>7} "
            f"{row['call_ms_p50']:>8.1f} {row['call_ms_p95']:>8.1f} {ratio:>9} "
            f"{row['replicas_marked_down']:>11} {cores:>9}  {what}"
        )
        if row["errors"]:
            print(f"{'':16} errors: {row['errors']}")

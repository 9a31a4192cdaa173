"""Attacks on a cluster's availability, each bounded in seconds and sockets: what the soak
runs beside its legitimate users (`loadtest.soak.run`).

    slow-bodies      sockets that send whole headers and `Content-Length: 100`, then one
                     byte of body; each reopened as soon as it is closed
    abandoned-waits  `tasks/result` on a working task, each socket closed as soon as the
                     request is sent, in waves
    cpu-heavy        `quote` at its `cpu_ms` cap and `crunch` at its `units` cap, kept
                     running (a refusal is tried again a moment later)
    oversized        a 16 MiB header, a 1 MB `clientInfo`, 1 MB of task arguments and a
                     body over the replicas' limit, again and again
    burst-stall, drip, small-cpu, subscription-growth
                     bodies that stall after a burst or drip in, small CPU calls at a
                     steady rate, subscriptions without end (`loadtest.soak.stall_attacks`)
    many-principals-waits
                     hundreds of principals each holding its four waits on a task of its
                     own (`loadtest.soak.task_waits`)
    cross-origin-lab forged requests from another page to the Lab tab's routes, its faults
                     above all (`loadtest.soak.cross_origin`)
    busy-core        no request at all: `sockets` processes spinning on this machine's
                     CPU (a control: what the users lose to an attacker that only shares
                     their cores, at the attacker's priority)

Each is an attack on availability as a caller would make it, from outside: raw sockets or the
reference clients, and the tools' caps read from `tools/list`. The attacker is
anonymous, as an attacker's would be (but for the many principals, whose tokens it mints),
and calls from an address of its own (`loadtest.soak.attacker`). An attack runs in a
process of its own (`AttackProcess`, `python -m loadtest.soak.attacks`), so that its
sockets and threads take nothing from the legitimate users' process, whose latencies are
the measurement.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import resource
import select
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from loadtest.soak.attacker import YES, connect, transport
from loadtest.soak.cross_origin import cross_origin_lab
from loadtest.soak.held_sockets import hold
from loadtest.soak.stall_attacks import burst_stall, drip, small_cpu, subscription_growth
from loadtest.soak.status_line import status_of
from loadtest.soak.task_waits import SECRET_ENV, abandoned_waits, many_principals_waits, raw_request
from server.client import SEED, McpError, MrtrClient, task_capabilities
from server.harness.process import ChildProcess, raise_file_limit

ATTACKS = (
    "slow-bodies",
    "abandoned-waits",
    "cpu-heavy",
    "oversized",
    "burst-stall",
    "drip",
    "small-cpu",
    "subscription-growth",
    "many-principals-waits",
    "cross-origin-lab",
    "busy-core",
)


#: Calls the CPU-heavy attack keeps running (four held /healthz for 3 s before the pool).
CPU_CALLS = 4
#: Threads sending oversized requests.
OVERSIZED_THREADS = 2
#: Each attack's size as first measured to take a replica down: sockets held (slow
#: bodies: 1,100 against the HAProxy port), sockets per wave (abandoned waits: 2,100),
#: calls kept running (four CPU-heavy calls), threads (oversized requests).
DEFAULT_SOCKETS = {
    "slow-bodies": 1100,
    "abandoned-waits": 2100,
    "cpu-heavy": CPU_CALLS,
    "oversized": OVERSIZED_THREADS,
    # As the round-3 report measured them: 2,100 sockets stalled after 100 KiB direct
    # (1,024 through HAProxy, its connection limit), 1,024 dripping, one small-CPU caller.
    "burst-stall": 1024,
    "drip": 1024,
    "small-cpu": 1,
    "subscription-growth": 4,
    # 520 principals of 4 waits each held /healthz in round 3; two threads of forgeries.
    "many-principals-waits": 520,
    "cross-origin-lab": 2,
    # One core: the attacker process's own use in the heaviest phases (`cpu_s`).
    "busy-core": 1,
}


@dataclass
class AttackReport:
    """What one attack did, and how the cluster answered it."""

    attack: str
    seconds: float
    sockets: int
    #: Requests (or sockets, for slow bodies) the attacker sent.
    sent: int = 0
    #: The cluster's answers by HTTP status ("closed": the connection ended without one;
    #: "left": the attacker closed first, as it meant to), and for oversized requests by
    #: kind too.
    answers: Counter[str] = field(default_factory=Counter)
    #: CPU seconds the attack's own process used from its beginning (its threads and the
    #: processes it started): on one machine, the attacker's cores are the users' too.
    cpu_s: float = 0.0
    #: Told once, when the attack itself begins (after what it prepares beforehand).
    on_ready: Callable[[], None] = field(default=lambda: None, repr=False)
    announced: bool = field(default=False, repr=False)
    #: The process's CPU seconds when the attack began (what it prepared is not counted).
    cpu_s_at_ready: float = field(default=0.0, repr=False)

    def ready(self) -> None:
        """The attack begins now: say so once."""
        if not self.announced:
            self.announced = True
            self.cpu_s_at_ready = _cpu_s()
            self.on_ready()

    def as_dict(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "seconds": self.seconds,
            "sockets": self.sockets,
            "sent": self.sent,
            "answers": dict(sorted(self.answers.items())),
            "cpu_s": round(self.cpu_s, 2),
        }


def tool_cap(url: str, tool: str, argument: str) -> float:
    """The largest value of `argument` the server's `tool` accepts (its schema's maximum)."""
    with MrtrClient(url, transport=transport()) as client:
        tools = {t["name"]: t for t in client.list_tools()}
    return float(tools[tool]["inputSchema"]["properties"][argument]["maximum"])


def slow_bodies(host: str, port: int, seconds: float, sockets: int, report: AttackReport) -> None:
    """Keep `sockets` requests whose body never comes; reopen each one the cluster closes."""
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{"
    )
    hold(host, port, seconds, sockets, report, lambda _: head)


def cpu_heavy(host: str, port: int, seconds: float, sockets: int, report: AttackReport) -> None:
    """`sockets` calls at the tools' CPU caps, kept running; a refusal is tried again."""
    url = f"http://{host}:{port}/mcp"
    heavy: list[tuple[str, dict[str, Any]]] = [
        ("quote", {"cpu_ms": tool_cap(url, "quote", "cpu_ms")}),
        ("crunch", {"units": int(tool_cap(url, "crunch", "units"))}),
    ]
    deadline = time.monotonic() + seconds
    lock = threading.Lock()

    def caller(index: int) -> None:
        with MrtrClient(
            url, handlers=YES, backoff_s=0.01, max_rounds=64, transport=transport()
        ) as client:
            turn = index
            while time.monotonic() < deadline:
                tool, arguments = heavy[turn % len(heavy)]
                turn += 1
                try:
                    client.call_tool(tool, arguments)
                    answer = "200"
                except McpError as error:
                    answer = str(error.http_status or error.code)
                    time.sleep(0.1)  # refused: a moment, then again
                except httpx.HTTPError:
                    answer = "closed"
                with lock:
                    report.sent += 1
                    report.answers[answer] += 1

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(sockets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def oversized(host: str, port: int, seconds: float, sockets: int, report: AttackReport) -> None:
    """Requests too big in each way a caller could send, from `sockets` threads, again and
    again; the answers are counted by kind."""
    url = f"http://{host}:{port}/mcp"
    megabyte = "x" * 1_000_000
    legacy_init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mallory", "version": "1", "padding": megabyte},
        },
    }
    capabilities = task_capabilities(YES.capabilities(), SEED)
    # echo runs as a task at once, its arguments kept for the task's life (a day at most).
    big_task = raw_request(
        "tools/call",
        {"name": "echo", "arguments": {"padding": megabyte}, "task": {"ttl": 86_400_000}},
        capabilities,
    )
    huge_header = (
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (16 << 20) + b"\r\n\r\n"
    )
    too_long_body = raw_request("tools/list", {"padding": "x" * 2_000_000}, capabilities)
    deadline = time.monotonic() + seconds
    lock = threading.Lock()

    def send_raw(data: bytes) -> str:
        try:
            with connect(host, port, 10) as sock:
                with contextlib.suppress(OSError):
                    sock.sendall(data)
                return status_of(sock.recv(64))
        except OSError:
            return "closed"

    def sender() -> None:
        with httpx.Client(timeout=10, transport=transport()) as http:
            while time.monotonic() < deadline:
                for kind, make in (
                    ("16 MiB header", lambda: send_raw(huge_header)),
                    ("1 MB clientInfo", lambda: str(http.post(url, json=legacy_init).status_code)),
                    ("1 MB task arguments", lambda: send_raw(big_task)),
                    ("2 MB body", lambda: send_raw(too_long_body)),
                ):
                    try:
                        answer = make()
                    except httpx.HTTPError:
                        answer = "closed"
                    with lock:
                        report.sent += 1
                        report.answers[f"{kind} {answer}"] += 1

    threads = [threading.Thread(target=sender) for _ in range(sockets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _spin(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def busy_core(host: str, port: int, seconds: float, sockets: int, report: AttackReport) -> None:
    """`sockets` processes spinning for `seconds`, at the attacker's priority; no request."""
    context = multiprocessing.get_context("spawn")
    spinners = [context.Process(target=_spin, args=(seconds,)) for _ in range(sockets)]
    for spinner in spinners:
        spinner.start()
    for spinner in spinners:
        spinner.join()


RUNS = {
    "slow-bodies": slow_bodies,
    "abandoned-waits": abandoned_waits,
    "cpu-heavy": cpu_heavy,
    "oversized": oversized,
    "burst-stall": burst_stall,
    "drip": drip,
    "small-cpu": small_cpu,
    "subscription-growth": subscription_growth,
    "many-principals-waits": many_principals_waits,
    "cross-origin-lab": cross_origin_lab,
    "busy-core": busy_core,
}


#: Attacks that prepare before they begin (and say when they do, `AttackReport.ready`):
#: their seconds count from then.
PREPARED = frozenset({"many-principals-waits"})
#: The line an attack process writes when its attack begins.
READY = "ready"
#: The attacker's CPU priority (niceness): the lowest, as if it ran on a machine of its own.
#: On one machine the attacker's process shares the users' and the replicas' cores, and
#: at their priority a process that only spins costs the users' p95 several times over
#: (the busy-core control: 5.2x): that is the machine shared, not the server attacked.
#: 0 measures it so.
ATTACKER_NICE = 19


def run_attack(
    attack: str,
    host: str,
    port: int,
    seconds: float,
    sockets: int,
    on_ready: Callable[[], None] = lambda: None,
) -> AttackReport:
    """Run one attack against `host:port` in this process for `seconds`; what it did.
    `on_ready` is told when it begins (at once, but for an attack that prepares)."""
    raise_file_limit(sockets)
    report = AttackReport(attack, seconds, sockets, on_ready=on_ready)
    if attack not in PREPARED:
        report.ready()
    RUNS[attack](host, port, seconds, sockets, report)
    report.ready()
    report.cpu_s = _cpu_s() - report.cpu_s_at_ready
    return report


def _cpu_s() -> float:
    """CPU seconds of this process and of its children that have ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class AttackProcess(ChildProcess):
    """One attack running in a process of its own (`python -m loadtest.soak.attacks`);
    `join` returns its report."""

    def __init__(
        self,
        attack: str,
        host: str,
        port: int,
        *,
        seconds: float,
        sockets: int,
        secret: str | None = None,
        nice: int = 0,
    ) -> None:
        if attack not in RUNS:
            raise ValueError(f"unknown attack {attack!r}; one of {', '.join(ATTACKS)}")
        self.seconds = seconds
        command = [sys.executable, "-m", __name__, attack, host, str(port), str(seconds)]
        # The cluster's token secret, for an attack that mints principals (as anyone with
        # the public development secret could).
        env = {**os.environ, **({SECRET_ENV: secret} if secret else {})}
        # `nice`: the attack's CPU priority (0 the users' own, 19 the lowest; its
        # processes all inherit it).
        self.process = subprocess.Popen(
            ["nice", "-n", str(nice), *command, str(sockets)],
            stdout=subprocess.PIPE,
            start_new_session=True,
            env=env,
        )

    def wait_ready(self, timeout_s: float = 300.0) -> None:
        """Wait until the attack begins (what it prepares done), `timeout_s` at most."""
        assert self.process is not None and self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], timeout_s)
        line = self.process.stdout.readline().decode().strip() if readable else ""
        if line != READY:
            self.stop()
            raise RuntimeError(f"the attack did not begin within {timeout_s:g} s: {line!r}")

    def join(self) -> dict[str, Any]:
        """Wait for the attack to end (its seconds, and a margin to let go); its report."""
        assert self.process is not None
        try:
            out, _ = self.process.communicate(timeout=self.seconds + 60)
        finally:
            self.stop()
        report: dict[str, Any] = json.loads(out)
        return report


def _session_at_own_niceness() -> None:
    """Give this process's session the process's niceness. Where Linux groups processes by
    session for the scheduler (autogroups, `/proc/sys/kernel/sched_autogroup_enabled`), it
    shares the CPU between sessions first and a niceness counts only within its own: the
    attack, a session of its own, would otherwise take as much as the users' session."""
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as group:
        group.write(str(os.nice(0)))


def main(argv: list[str]) -> None:
    """python -m loadtest.soak.attacks ATTACK HOST PORT SECONDS SOCKETS: its report as JSON."""
    attack, host, port, seconds, sockets = argv
    _session_at_own_niceness()
    report = run_attack(
        attack, host, int(port), float(seconds), int(sockets), lambda: print(READY, flush=True)
    )
    print(json.dumps(report.as_dict()))


if __name__ == "__main__":
    main(sys.argv[1:])

"""Instructions per request, live: each server under callgrind, served over a real socket.

Timings on a shared virtual machine move by 10-20 us per request between runs, and its
virtual CPUs expose no hardware counters. An instruction count does not move with the
machine's load: the server runs under valgrind's callgrind with counting off while it
starts, is walked through its rounds, then counts exactly the user-space instructions of
`requests` requests of each round kind, sent one after another on one kept-alive
connection. It is the whole process's work per request (uvicorn, httptools, uvloop, the
app, the libraries), the part of CPU time a faster request path can cut; the kernel's
share and how many cycles each instruction takes are not in it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

from loadtest.bench.commit_tree import CommitTree, checked_out
from loadtest.bench.rounds import KINDS
from loadtest.bench.targets import RunningTarget, target
from loadtest.config import LoadTestError
from server.harness.process import free_port

START_TIMEOUT_S = 180
#: The bench's servers that run on Python, the ones counted here.
PYTHON_SERVERS = ("bare", "lab", "sdk", "lab-mypyc", "floor")
#: Requests each round kind sends before counting starts (caches, lazy imports).
WARM_REQUESTS = 20


class CountedTarget(RunningTarget):
    """A server of the bench started under callgrind, counting nothing until asked."""

    def __init__(self, name: str, out_dir: Path, tree: CommitTree | None = None) -> None:
        port = free_port()
        server = tree.target(port) if tree is not None else target(name, port)
        self.out = out_dir / f"callgrind.{name.replace('@', '-')}"
        # String hashes seeded alike in every run, so dicts and sets lay out the same way
        # and two runs count alike.
        server.environment = {**server.environment, "PYTHONHASHSEED": "0"}
        server.command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={self.out}",
            *server.command,
        ]
        # Valgrind translates every instruction the first time it runs: starting is slow.
        super().__init__(server, port, start_timeout_s=START_TIMEOUT_S)

    def control(self, *args: str) -> None:
        """Send callgrind a command (`-i on`, `-z`, `-d NAME`) and wait until it is done."""
        assert self.process is not None
        subprocess.run(
            ["callgrind_control", *args, str(self.process.pid)],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def count(self, kind: str, requests: int) -> float:
        """User-space instructions per request of round `kind`, over `requests` requests."""
        timed = self.rounds[kind]
        with httpx.Client(timeout=60) as http:

            def send(n: int) -> None:
                for _ in range(n):
                    http.post(self.url, json=timed.body, headers=timed.headers).raise_for_status()

            send(WARM_REQUESTS)
            self.control("-z")
            self.control("-i", "on")
            send(requests)
            self.control("-i", "off")
            self.control("-d", kind)
        return _dumped_total(self.out, kind) / requests


def _dumped_total(out: Path, kind: str) -> int:
    """The instruction total of the dump callgrind wrote for `kind` (the newest part)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for part in sorted(out.parent.glob(out.name + "*"), key=os.path.getmtime, reverse=True):
            text = part.read_text(errors="replace")
            if re.search(rf"^desc: Trigger: dump {re.escape(kind)}$", text, re.M):
                totals = re.search(r"^totals: (\d+)", text, re.M)
                if totals:
                    return int(totals.group(1))
        time.sleep(0.2)
    raise TimeoutError(f"callgrind wrote no dump for {kind}")


def count_instructions(
    servers: tuple[str, ...] = ("bare", "lab"),
    kinds: tuple[str, ...] = KINDS,
    requests: int = 200,
    compare_commits: tuple[str, ...] = (),
) -> dict[str, dict[str, float]]:
    """Instructions per request of each round kind on each server, counted live.

    `compare_commits` adds the lab of each of those commits (`loadtest.bench.commit_tree`).
    """
    others = [name for name in servers if name not in PYTHON_SERVERS]
    if others:
        raise LoadTestError(
            f"instructions are counted on the Python servers only ({', '.join(PYTHON_SERVERS)}), "
            f"not {', '.join(others)}"
        )
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise RuntimeError("valgrind (callgrind) is not installed")
    counts: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="mrtr-instructions-") as tmp, ExitStack() as trees:
        counted: list[tuple[str, CommitTree | None]] = [(name, None) for name in servers]
        for rev in compare_commits:
            other = trees.enter_context(checked_out(rev))
            counted.append((other.name, other))
        for name, tree in counted:
            print(f"counting {name} under callgrind ...", file=sys.stderr, flush=True)
            server = CountedTarget(name, Path(tmp), tree)
            try:
                counts[name] = {kind: server.count(kind, requests) for kind in kinds}
            finally:
                server.stop(timeout_s=30)
    return counts


def print_instructions(counts: dict[str, dict[str, float]], requests: int) -> None:
    """Thousands of instructions per request, and each server's over bare's, per round kind."""
    kinds = list(next(iter(counts.values())))
    over_bare = [name for name in counts if name != "bare"] if "bare" in counts else []
    width = max(8, *(len(f"{name}/bare") for name in over_bare), *(len(name) for name in counts))
    print(
        f"user-space instructions per request, thousands, live under callgrind "
        f"({requests} requests per round, one connection):"
    )
    print(f"{'server':<{width}}" + "".join(f"{kind:>9}" for kind in kinds))
    for name, per_kind in counts.items():
        print(f"{name:<{width}}" + "".join(f"{per_kind[kind] / 1e3:>9.0f}" for kind in kinds))
    for name in over_bare:
        print(
            f"{name + '/bare':<{width}}"
            + "".join(f"{counts[name][k] / counts['bare'][k]:>8.2f}x" for k in kinds)
        )

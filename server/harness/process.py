"""A replica as its own operating-system process: start it, wait until healthy, stop it.

Tests, the conformance runner and the load-test cluster all start replicas this way, on
127.0.0.1 and a port chosen free, and stop them by pid, also when something fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_healthy(url: str, timeout_s: float, process: subprocess.Popen | None = None) -> None:
    """Poll `url` until it answers 200; raise if the process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"process exited with code {process.returncode} before {url} was up")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not become healthy within {timeout_s} s")


#: The CPUs this process could run on when it started, before it pinned itself to some:
#: the children it pins elsewhere may still have the others.
_STARTED_ON = frozenset(os.sched_getaffinity(0))


def pinned(command: list[str], cpus: str | None) -> list[str]:
    """`command` pinned to the CPU list `cpus` (e.g. "0" or "0,1") with taskset.

    Left unpinned where taskset is missing or the machine lacks one of those CPUs.
    """
    if cpus is None or shutil.which("taskset") is None or _cpu_set(cpus) is None:
        return command
    return ["taskset", "-c", cpus, *command]


def pin_this_process(cpus: str) -> bool:
    """Run this process from now on only on the CPU list `cpus`; whether it could (not on
    a machine that lacks one of them)."""
    wanted = _cpu_set(cpus)
    if wanted is None:
        return False
    os.sched_setaffinity(0, wanted)
    return True


def _cpu_set(cpus: str) -> set[int] | None:
    """The CPUs of the list `cpus`, or None when this process could not run on one of them."""
    wanted = {int(c) for c in cpus.split(",")}
    return wanted if wanted <= _STARTED_ON else None


class ChildProcess:
    """A program the lab started and must stop: by pid, politely first, also after errors."""

    process: subprocess.Popen | None = None

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop it: SIGTERM, then SIGKILL if it does not exit in time."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout_s)

    def kill(self) -> None:
        """Kill it at once, as a crash or an outage would."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(5)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None


class ServerProcess(ChildProcess):
    """One `python -m server` replica in a child process of its own."""

    def __init__(
        self,
        *,
        port: int | None = None,
        replica_id: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        cpus: str | None = None,
    ) -> None:
        self.port = port or free_port()
        #: CPU list to pin the process to (`taskset -c`), e.g. "0"; None leaves it free.
        self.cpus = cpus
        self.replica_id = replica_id or f"replica-{self.port}"
        self.args = list(args)
        self.env = dict(env or {})
        self.log_path = log_path

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> ServerProcess:
        """Start the replica and wait until /healthz answers."""
        command = [
            sys.executable,
            "-m",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--replica-id",
            self.replica_id,
            *self.args,
        ]
        command = pinned(command, self.cpus)
        env = {**os.environ, "PYTHONWARNINGS": "ignore", **self.env}
        log = open(self.log_path, "ab") if self.log_path else None  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                command,
                env=env,
                stdout=log if log is not None else subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if log is not None:
                log.close()  # the child holds its own copy
        try:
            wait_until_healthy(f"{self.base_url}/healthz", timeout_s, self.process)
        except Exception:
            self.stop()
            raise
        return self

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def raise_file_limit(wanted: int) -> None:
    """Raise this process's open-file limit to its hard limit, so `wanted` sockets fit.

    The usual soft limit (1,024) would let a burst of idle sockets make every other
    client's connection fail before the server's own connection cap could answer 503.
    """
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, wanted + 256)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if max(soft, hard) < wanted + 64:
        print(
            f"warning: the open-file limit ({hard}) is below --max-connections ({wanted})",
            file=sys.stderr,
        )

"""A throwaway `redis-server`: the shared store of SSE + store, and the task store.

Two ways to run it:

- volatile (the default): no RDB, no AOF. The SSE + store architecture uses Redis as a
  message path and a session registry, not as a database; a restart loses what a
  replica holds anyway.
- persistent (`data_dir` given): an append-only file in that folder. Redis writes each
  command to it (into the operating system's cache) before it answers, so a Redis
  killed and restarted still has every task it acknowledged; with `everysec` the one
  exception is a write Redis postpones (up to 2 s) while an earlier fsync lags. `fsync`
  decides what a crash of the whole machine could take: `everysec` about a second of
  writes, `always` nothing. `maxmemory-policy noeviction`: a full store refuses writes
  instead of silently dropping tasks.

Either way it keeps at most `maxmemory_bytes` (256 MiB), under `noeviction`: however many
principals open sessions or tasks, a full Redis refuses the write and the replica answers
"store full" (507), never the machine's memory.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from server.harness.process import ChildProcess, free_port

FSYNC_POLICIES = ("everysec", "always")
#: What a lab Redis keeps at most: room for every task and session of a load test.
MAXMEMORY_BYTES = 256 * 1024 * 1024


class RedisServer(ChildProcess):
    """A `redis-server` child process on 127.0.0.1 and a free port."""

    def __init__(
        self,
        port: int | None = None,
        *,
        data_dir: Path | None = None,
        fsync: str = "everysec",
        maxmemory_bytes: int = MAXMEMORY_BYTES,
    ) -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"appendfsync {fsync!r}: choose from {FSYNC_POLICIES}")
        self.port = port or free_port()
        self.data_dir = data_dir
        self.fsync = fsync
        self.maxmemory_bytes = maxmemory_bytes

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def persistent(self) -> bool:
        return self.data_dir is not None

    def command(self) -> list[str]:
        """The `redis-server` command line for this server."""
        command = [
            "redis-server",
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--save", "",
            "--maxmemory", str(self.maxmemory_bytes),
            "--maxmemory-policy", "noeviction",
        ]  # fmt: skip
        if self.data_dir is None:
            return [*command, "--appendonly", "no"]
        return [
            *command,
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.fsync,
        ]  # fmt: skip

    def start(self, timeout_s: float = 10.0) -> RedisServer:
        """Start the server (again, on the same port and data) and wait until it answers PING."""
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            self.command(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)
        return self

    def ping(self) -> bool:
        """Whether the server answers PING right now (not while it loads its data)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

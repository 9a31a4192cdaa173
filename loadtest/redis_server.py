"""A throwaway `redis-server`: the shared store of the SSE + shared-store architecture.

No persistence (no RDB, no AOF): the lab measures Redis as a message path and a session
registry, not as a database.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

from server.harness.process import ChildProcess, free_port


class RedisServer(ChildProcess):
    """A `redis-server` child process on 127.0.0.1 and a free port."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> RedisServer:
        """Start the server and wait until it answers PING."""
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--protected-mode", "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)
        return self

    def ping(self) -> bool:
        """Whether the server answers PING right now."""
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

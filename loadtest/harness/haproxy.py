"""HAProxy in front of the replicas: its configuration, its process and its runtime API.

Two policies matter to the lab: plain round-robin (MRTR and SSE + shared store: any
replica may take any request) and cookie stickiness (the legacy answer must reach the
replica that holds the stream). HAProxy marks every response with the server that served
it (`X-Served-By`), so the load test can count calls per replica without asking them.

The runtime API (a Unix socket) drives rolling upgrades: `drain` stops new sessions but
still routes clients that carry the server's cookie, `maint` takes the server out
entirely, `ready` puts it back.
"""

from __future__ import annotations

import csv
import io
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from server.harness.process import ChildProcess, pinned

BACKEND = "replicas"
#: Connections one source address may hold open at the edge before its requests are held
#: and refused there (`render_config`): far above what one client needs, far below a
#: socket attack's thousand.
CONNECTIONS_PER_SOURCE = 256


@dataclass(frozen=True)
class Backend:
    """One replica as HAProxy knows it."""

    name: str
    port: int


def render_config(
    *,
    lb_port: int,
    backends: list[Backend],
    sticky: bool,
    admin_socket: Path,
    health_check_interval_ms: int = 300,
    health_check_timeout_ms: int = 2000,
    stream_timeout_s: float = 60.0,
    max_connections_per_server: int = 512,
    request_timeout_s: float = 10.0,
    max_connections_per_source: int = CONNECTIONS_PER_SOURCE,
) -> str:
    """An haproxy.cfg for the lab's cluster.

    `request_timeout_s` bounds a whole request, headers and body, from its first byte: it
    matches the replicas' own header and body timeouts (`--header-timeout-s`,
    `--body-timeout-s`). `max_connections_per_source` bounds the connections one source
    address holds open at once: a request that comes on a connection beyond it is held at
    the edge (the tarpit) for `request_timeout_s` and answered 429, never passed on.
    """
    cookie = "    cookie SERVERID insert indirect nocache\n" if sticky else ""
    servers = "".join(
        f"    server {b.name} 127.0.0.1:{b.port} check inter {health_check_interval_ms}"
        f" fall 1 rise 1{f' cookie {b.name}' if sticky else ''}\n"
        for b in backends
    )
    return f"""global
    maxconn 4096
    stats socket {admin_socket} mode 600 level admin
    stats timeout 10s

defaults
    mode http
    timeout connect 2s
    # A client must send its whole request promptly: HAProxy waits for the body before it
    # picks a replica (http-buffer-request), and the request timeout covers the body too,
    # so idle, slow-header and slow-body sockets are cut here (408) and never hold a
    # replica's connection. Bodies larger than HAProxy's buffer (16 KiB) go on once it
    # is full, under the replicas' own rule: the rest must average their minimum rate.
    option http-buffer-request
    timeout http-request {round(request_timeout_s * 1000)}ms
    # SSE streams stay open while a user thinks; the replicas' keep-alive comments (every
    # 15 s) keep them active, so a minute without a byte means the peer is gone.
    timeout client {round(stream_timeout_s * 1000)}ms
    timeout server {round(stream_timeout_s * 1000)}ms
    timeout http-keep-alive 10s
    timeout queue 5s
    # A request held for its source's excess (the frontend's tarpit) waits this long, then
    # gets its 429: a source that reopens each refused connection at once cannot make the
    # edge spin.
    timeout tarpit {round(request_timeout_s * 1000)}ms
    # A health check waits behind the requests a busy replica has queued: a replica that
    # is slow but alive stays in rotation (a crashed one refuses the connection at once).
    timeout check {health_check_timeout_ms}ms
    option redispatch
    # A client that closes its connection aborts its request at the replica too, not only
    # in the queue: otherwise a replica goes on serving (or waiting, as tasks/result does)
    # for a client that left, holding one of its connections (maxconn) per abandoned call.
    option abortonclose
    option http-no-delay
    retries 2
    # Only requests that never reached a replica are retried here; a request cut by a
    # crash comes back to the client as a 502, and the client decides (MRTR: send the
    # round again; legacy: start the call again).
    retry-on conn-failure

frontend mcp
    bind 127.0.0.1:{lb_port}
    # Connections per source address. One source's sockets that hold requests open (a body
    # that stalls after a burst passes the buffer and reaches a replica) would otherwise
    # fill every replica's slots; past its bound, a source's requests are held here and
    # refused, costing the replicas nothing, while every other source is served.
    stick-table type ip size 100k expire 30s store conn_cur
    tcp-request connection track-sc0 src
    http-request tarpit deny_status 429 if {{ sc0_conn_cur gt {max_connections_per_source} }}
    default_backend {BACKEND}

backend {BACKEND}
    balance roundrobin
    # Beyond this a replica's requests wait in HAProxy's queue (timeout queue) instead of
    # piling onto it.
    default-server maxconn {max_connections_per_server}
    option httpchk GET /healthz
    http-check expect status 200
    http-response set-header X-Served-By %[srv_name]
{cookie}{servers}"""


class HAProxy(ChildProcess):
    """An HAProxy process with a generated configuration."""

    def __init__(self, config_text: str, workdir: Path) -> None:
        self.workdir = workdir
        self.config_path = workdir / "haproxy.cfg"
        self.config_path.write_text(config_text)

    @staticmethod
    def available() -> bool:
        return shutil.which("haproxy") is not None

    def start(
        self, admin_socket: Path, cpus: str | None = None, timeout_s: float = 10.0
    ) -> HAProxy:
        """Start HAProxy in the foreground (its own process group) and wait for its socket."""
        check = subprocess.run(
            ["haproxy", "-c", "-f", str(self.config_path)], capture_output=True, text=True
        )
        if check.returncode != 0:
            raise RuntimeError(f"haproxy rejected its configuration:\n{check.stdout}{check.stderr}")
        log = open(self.workdir / "haproxy.log", "ab")  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                pinned(["haproxy", "-db", "-f", str(self.config_path)], cpus),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout_s
        while not admin_socket.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("haproxy did not start; see haproxy.log")
            time.sleep(0.02)
        return self


class RuntimeApi:
    """A client of HAProxy's runtime API on its admin socket."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path

    def command(self, line: str) -> str:
        """Send one command and return HAProxy's answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket_path))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def set_state(self, server: str, state: str) -> None:
        """Put a server in `ready`, `drain` or `maint`."""
        if state not in ("ready", "drain", "maint"):
            raise ValueError(f"unknown server state {state!r}")
        answer = self.command(f"set server {BACKEND}/{server} state {state}").strip()
        if answer:
            raise RuntimeError(f"haproxy refused to set {server} {state}: {answer}")

    def drain(self, server: str) -> None:
        self.set_state(server, "drain")

    def maint(self, server: str) -> None:
        self.set_state(server, "maint")

    def ready(self, server: str) -> None:
        self.set_state(server, "ready")

    def show_stat(self) -> list[dict[str, str]]:
        """`show stat` as rows (one per frontend, backend and server)."""
        text = self.command("show stat").lstrip("# ")
        return list(csv.DictReader(io.StringIO(text)))

    def server_stats(self) -> dict[str, dict[str, str]]:
        """Stats of each replica by name: `scur` (sessions now), `status`, `stot`, ..."""
        return {
            row["svname"]: row
            for row in self.show_stat()
            if row.get("pxname") == BACKEND and row.get("svname") not in ("BACKEND", "FRONTEND")
        }

    def sessions(self, server: str) -> int:
        """Sessions the server holds now."""
        return int(self.server_stats()[server]["scur"] or 0)

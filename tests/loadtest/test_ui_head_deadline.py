"""The swarm's web UI closes half-sent request heads within its deadline, and still
answers whole requests."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx

from server.harness.process import free_port

#: The UI's server, with a short head deadline, serving a one-line WSGI app.
SERVER = """
import sys
from loadtest.labtab.web_server import head_deadline_server

def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]

head_deadline_server("127.0.0.1", int(sys.argv[1]), app, head_timeout_s=1.0).serve_forever()
"""


def wait_for_port(port: int, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def closed_after_s(sock: socket.socket, drip: bytes, bound_s: float) -> float:
    """Seconds until the server closes `sock`, dripping `drip` a byte every 0.2 s."""
    started = time.monotonic()
    sock.settimeout(0.2)
    sent = 0
    while time.monotonic() - started < bound_s:
        try:
            sock.recv(4096)  # an answer (a 400) or the close: the head's life ends
            return time.monotonic() - started
        except TimeoutError:
            if sent < len(drip):
                try:
                    sock.sendall(drip[sent : sent + 1])
                except OSError:
                    return time.monotonic() - started
                sent += 1
        except OSError:
            return time.monotonic() - started
    raise AssertionError(f"a half-sent head was still open after {bound_s} s")


def test_half_sent_heads_are_closed_and_whole_requests_answered() -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    try:
        wait_for_port(port, 20)
        heads = [b"", b"GET / HTTP/1.1\r\n", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: 1"]
        socks = []
        for head in heads:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(head)
            socks.append(sock)
        # A head dripped a byte at a time, never finished, is cut all the same.
        dripping = socket.create_connection(("127.0.0.1", port), timeout=5)
        for sock in socks:
            assert closed_after_s(sock, b"", 4.0) < 4.0
            sock.close()
        assert closed_after_s(dripping, b"GET / HTTP/1.1\r\nX-Drip: " + b"a" * 100, 4.0) < 4.0
        dripping.close()
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).text == "ok"
    finally:
        server.terminate()
        server.wait(10)

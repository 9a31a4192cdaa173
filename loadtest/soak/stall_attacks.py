"""Attacks that hold requests open after their head, each bounded in seconds and sockets
(run beside the soak's legitimate users by `loadtest.soak.attacks`):

    burst-stall   sockets that send a head (`Content-Length` 1 MiB) and 100 KiB of body
                  at once, then nothing; each reopened as soon as it is closed
    drip          sockets that send a head (`Content-Length` 1 MiB) and then 1,200 bytes
                  a second each, just under what a body's minimum rate might allow
    small-cpu     one anonymous caller of `quote` with `cpu_ms` 10, 65 calls a second
                  (within a rate limit of the lab's size), each answered and finished
    subscription-growth
                  anonymous 2025-11-25 sessions subscribing to URIs of 900 KB and of
                  2,000 bytes in turn, without end; a session refused opens another
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections import Counter
from typing import Any, Protocol

import httpx

from loadtest.soak.status_line import status_of
from server.client import Handlers, LegacyClient, McpError, MrtrClient, accept

#: The body a stalled request declares, and the burst it sends before it stalls.
DECLARED_BYTES = 1 << 20
BURST_BYTES = 100 * 1024
#: The drip's bytes per second per socket, and how often it sends them.
DRIP_PER_S = 1200
DRIP_EVERY_S = 0.25
#: The small CPU calls' rate and size.
SMALL_CPU_PER_S = 65.0
SMALL_CPU_MS = 10


def _yes(params: dict[str, Any]) -> dict[str, Any]:
    fields = (params.get("requestedSchema") or {}).get("properties", {})
    return accept(**{k: v.get("type") == "boolean" or "mallory" for k, v in fields.items()})


#: The attacker's answer to every question: yes (or its name).
YES = Handlers(elicit=_yes)


class Report(Protocol):
    """What an attack counts (`loadtest.soak.attacks.AttackReport`)."""

    sent: int
    answers: Counter[str]


def _head(declared: int) -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(declared).encode() + b"\r\n\r\n"
    )


def _held(
    host: str, port: int, seconds: float, sockets: int, report: Report, burst: bytes, drip: int
) -> None:
    """Keep `sockets` requests open: each sends its head and `burst` at once, then `drip`
    bytes a second (0: nothing); one the cluster closes is counted and reopened."""
    selector = selectors.DefaultSelector()
    opened: list[socket.socket] = []

    def open_one() -> None:
        with contextlib.suppress(OSError):
            sock = socket.create_connection((host, port), timeout=5)
            sock.sendall(_head(DECLARED_BYTES) + burst)
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
            opened.append(sock)
            report.sent += 1

    deadline = time.monotonic() + seconds
    for _ in range(sockets):
        open_one()
    next_drip = time.monotonic() + DRIP_EVERY_S
    try:
        while time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    first = sock.recv(64)
                except OSError:
                    first = b""
                report.answers[status_of(first)] += 1
                selector.unregister(sock)
                opened.remove(sock)
                sock.close()
                if time.monotonic() < deadline:
                    open_one()
            if drip and time.monotonic() >= next_drip:
                next_drip += DRIP_EVERY_S
                chunk = b" " * round(drip * DRIP_EVERY_S)
                for sock in list(opened):
                    with contextlib.suppress(OSError):
                        sock.send(chunk)
    finally:
        for key in list(selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]
            report.answers["left"] += 1
        selector.close()


def burst_stall(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """`sockets` requests that send 100 KiB of their body with the head, then stall."""
    _held(host, port, seconds, sockets, report, b"{" + b" " * (BURST_BYTES - 1), 0)


def drip(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """`sockets` requests whose body drips in at 1,200 bytes a second each."""
    _held(host, port, seconds, sockets, report, b"{", DRIP_PER_S)


def small_cpu(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """`sockets` anonymous callers of `quote` (`cpu_ms` 10), 65 calls a second in all."""
    url = f"http://{host}:{port}/mcp"
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    gap_s = sockets / SMALL_CPU_PER_S

    def caller() -> None:
        with MrtrClient(url, handlers=YES, backoff_s=0.01, max_rounds=64) as client:
            while time.monotonic() < deadline:
                started = time.monotonic()
                try:
                    client.call_tool("quote", {"cpu_ms": SMALL_CPU_MS})
                    answer = "200"
                except McpError as error:
                    answer = str(error.http_status or error.code)
                except httpx.HTTPError:
                    answer = "closed"
                with lock:
                    report.sent += 1
                    report.answers[answer] += 1
                time.sleep(max(0.0, gap_s - (time.monotonic() - started)))

    threads = [threading.Thread(target=caller) for _ in range(sockets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


#: The subscribed URIs' sizes, in turn: the round-3 report's 900 KB, and just under the
#: lab's cap on one URI (2,048 bytes), so that the caps on count and total bytes are met.
SUBSCRIPTION_URI_BYTES = (900_000, 2_000)


def subscription_growth(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """`sockets` anonymous 2025-11-25 sessions subscribing to URIs without end; a session
    refused opens another."""
    url = f"http://{host}:{port}/mcp"
    deadline = time.monotonic() + seconds
    lock = threading.Lock()

    def count(answer: str) -> None:
        with lock:
            report.sent += 1
            report.answers[answer] += 1

    def grower(index: int) -> None:
        turn = 0
        while time.monotonic() < deadline:
            try:
                with LegacyClient(url) as session:
                    while time.monotonic() < deadline:
                        size = SUBSCRIPTION_URI_BYTES[turn % len(SUBSCRIPTION_URI_BYTES)]
                        uri = f"file:///grow/{index}/{turn}/" + "a" * size
                        turn += 1
                        try:
                            session.request("resources/subscribe", {"uri": uri})
                            count("200")
                        except McpError as error:
                            count(str(error.http_status or error.code))
                            if error.http_status == 429:
                                break  # this session is full: another
            except (McpError, httpx.HTTPError):
                count("closed")
                time.sleep(0.05)

    threads = [threading.Thread(target=grower, args=(i,)) for i in range(sockets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

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

import threading
import time

import httpx

from loadtest.soak.attacker import YES, transport
from loadtest.soak.held_sockets import Report, hold
from server.client import LegacyClient, McpError, MrtrClient

#: The body a stalled request declares, and the burst it sends before it stalls.
DECLARED_BYTES = 1 << 20
BURST_BYTES = 100 * 1024
#: The drip's bytes per second per socket.
DRIP_PER_S = 1200
#: The small CPU calls' rate and size.
SMALL_CPU_PER_S = 65.0
SMALL_CPU_MS = 10


def _head(declared: int) -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(declared).encode() + b"\r\n\r\n"
    )


def burst_stall(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """`sockets` requests that send 100 KiB of their body with the head, then stall."""
    opening = _head(DECLARED_BYTES) + b"{" + b" " * (BURST_BYTES - 1)
    hold(host, port, seconds, sockets, report, lambda _: opening)


def drip(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """`sockets` requests whose body drips in at 1,200 bytes a second each."""
    opening = _head(DECLARED_BYTES) + b"{"
    hold(host, port, seconds, sockets, report, lambda _: opening, DRIP_PER_S)


def small_cpu(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """`sockets` anonymous callers of `quote` (`cpu_ms` 10), 65 calls a second in all."""
    url = f"http://{host}:{port}/mcp"
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    gap_s = sockets / SMALL_CPU_PER_S

    def caller() -> None:
        with MrtrClient(
            url, handlers=YES, backoff_s=0.01, max_rounds=64, transport=transport()
        ) as client:
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
                with LegacyClient(url, transport=transport()) as session:
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

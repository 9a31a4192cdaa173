"""Requests held open from raw sockets: the loop the socket attacks share (slow bodies,
bodies that stall after a burst or drip, waits held on tasks).

Each socket opens from the attacker's address, sends its opening bytes (a head and as
much body as the attack sends at once), then, if the attack drips, a few bytes at a time
at its rate. One the cluster answers or closes is counted by its answer and opened again
with the same opening, until the attack's seconds are up; what is still open then is
counted as "left". A socket that cannot be opened ("not opened"), or is closed before it
has sent its opening ("closed"), is counted and not opened again.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time
from collections import Counter
from collections.abc import Callable
from typing import Protocol

from loadtest.soak.attacker import connect
from loadtest.soak.status_line import answer_of

#: How often a dripping socket sends its next bytes.
DRIP_EVERY_S = 0.25


class Report(Protocol):
    """What an attack counts, and where it says it begins
    (`loadtest.soak.attacks.AttackReport`)."""

    sent: int
    answers: Counter[str]

    def ready(self) -> None: ...


def hold(
    host: str,
    port: int,
    seconds: float,
    sockets: int,
    report: Report,
    opening: Callable[[int], bytes],
    drip_bytes_per_s: int = 0,
) -> None:
    """Keep `sockets` requests open for `seconds`: socket `i` sends `opening(i)` at once,
    then `drip_bytes_per_s` a second (0: nothing more); one answered or closed is counted
    and reopened."""
    selector = selectors.DefaultSelector()
    index_of: dict[socket.socket, int] = {}

    def open_one(index: int) -> None:
        try:
            sock = connect(host, port)
        except OSError:
            report.answers["not opened"] += 1
            return
        try:
            sock.sendall(opening(index))
        except OSError:  # closed before it took the whole opening
            report.answers["closed"] += 1
            sock.close()
            return
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        index_of[sock] = index
        report.sent += 1

    deadline = time.monotonic() + seconds
    for index in range(sockets):
        open_one(index)
    next_drip = time.monotonic() + DRIP_EVERY_S
    chunk = b" " * round(drip_bytes_per_s * DRIP_EVERY_S)
    try:
        while time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.05):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    first = sock.recv(4096)  # the answer's head, or most of it
                except OSError:
                    first = b""
                report.answers[answer_of(first)] += 1
                selector.unregister(sock)
                index = index_of.pop(sock)
                sock.close()
                if time.monotonic() < deadline:
                    open_one(index)
            if chunk and time.monotonic() >= next_drip:
                next_drip += DRIP_EVERY_S
                for sock in list(index_of):
                    with contextlib.suppress(OSError):
                        sock.send(chunk)
    finally:
        for sock in index_of:
            sock.close()
            report.answers["left"] += 1
        selector.close()

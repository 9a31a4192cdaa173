"""Checks that hold for the whole test session."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Programs the tests start; none may outlive the session.
WATCHED = (b"-m\x00server", b"haproxy", b"redis-server", b"-m\x00locust")


def watched_processes() -> set[int]:
    """Pids of running lab servers, load balancers, stores and swarms."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if any(w in cmdline for w in WATCHED):
            found.add(int(entry.name))
    return found


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """Every process a test started is stopped by the end of the session."""
    before = watched_processes()
    yield
    deadline = time.monotonic() + 5
    while (left := watched_processes() - before - {os.getpid()}) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes left behind: {sorted(left)}"

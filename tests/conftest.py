"""Checks that hold for the whole test session."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Marks every process this session starts (children inherit the environment), so the
#: check below sees only this session's processes, not another run's on the same machine.
SESSION_MARK = f"MRTR_LAB_TEST_SESSION={uuid.uuid4().hex}"


def session_processes() -> set[int]:
    """Pids of live processes started (directly or not) by this test session."""
    mark = SESSION_MARK.encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        if mark in environ.split(b"\x00") and state != "Z" and not _own_helper(entry, parent):
            found.add(int(entry.name))
    return found


#: Processes an interpreter starts for itself and stops when it exits (multiprocessing's
#: resource tracker and fork server): the test session's own end stops them.
OWN_HELPERS = (b"multiprocessing.resource_tracker", b"multiprocessing.forkserver")


def _own_helper(entry: Path, parent: str) -> bool:
    """Whether a process (its parent's pid as /proc gives it) is one of this session's
    interpreter's own helpers."""
    if parent != str(os.getpid()):
        return False
    try:
        command = (entry / "cmdline").read_bytes()
    except OSError:
        return False
    return any(helper in command for helper in OWN_HELPERS)


def command_of(pid: int) -> str:
    """The command line of a process, as `ps` would show it (empty once it is gone)."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\x00", b" ").decode()
    except OSError:
        return ""


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """Every process a test started is stopped by the end of the session."""
    name, _, value = SESSION_MARK.partition("=")
    os.environ[name] = value
    yield
    deadline = time.monotonic() + 5
    while (left := session_processes()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, "processes left behind: " + "; ".join(
        f"{pid} {command_of(pid)}" for pid in sorted(left)
    )


#: Folders whose every test belongs to one tier (a marker declared in pyproject.toml).
FOLDER_TIERS = {"browser": pytest.mark.browser}
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test of a tiered folder with its folder's tier."""
    for item in items:
        if not item.path.is_relative_to(TESTS):
            continue
        parts = item.path.relative_to(TESTS).parts
        if len(parts) > 1 and parts[0] in FOLDER_TIERS:
            item.add_marker(FOLDER_TIERS[parts[0]])

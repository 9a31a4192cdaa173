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

#: Files whose tests share one session fixture that is costly to make (the light install's
#: JupyterLab with every notebook's Run All): `make test`'s workers run them on one worker,
#: so the fixture is made once.
SHARED_GROUPS = {
    "browser/test_book.py": "light-lab",
    "browser/test_light_install.py": "light-lab",
}

#: Files whose tests judge time or CPU under load tightly (a health check within half a
#: second, a replica's busy share, a calibration's shape, no failed call beside an attack):
#: marked `serial`, which `make test` runs alone after the rest has run on two workers, so
#: no other test's load skews what they measure. And nbgrader's grading of a notebook:
#: beside another notebook's run it hung 5 times in 14, waiting on a cell the
#: kernel had run (the reply never read; alone, never seen). And the README's idle-timeout
#: finding, whose few users must start the dozen calls its words need: beside Run All of
#: the notebooks they started 7. And the health check beside four CPU-heavy calls: beside
#: the rest of the first pass, one check of many took 0.61 s.
SERIAL_FILES = {
    "loadtest/test_attack_soak.py",
    "loadtest/test_calibrate.py",
    "loadtest/test_ceiling_live.py",
    "loadtest/test_measure.py",
    "notebooks/test_assignments.py",
    "server/test_abandoned_waits.py",
    "server/test_cpu_work.py",
    "server/test_replica_totals.py",
    "test_readme_findings.py",
}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m serial` (`make test`'s second pass) only the `SERIAL_FILES` are collected:
    importing every other test module only to deselect its tests took a quarter minute."""
    if config.getoption("markexpr") != "serial" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_") or not collection_path.is_relative_to(TESTS):
        return None
    return collection_path.relative_to(TESTS).as_posix() not in SERIAL_FILES


def worker_group(nodeid: str) -> str:
    """The group a test runs in under `pytest -n N`: its file (a module's fixtures are
    made once), or the group its file shares a session fixture with (`SHARED_GROUPS`).
    Groups go to workers whole, in the order their first test was collected."""
    file = nodeid.split("::", 1)[0]
    relative = file.removeprefix(f"{TESTS.name}/")
    return SHARED_GROUPS.get(relative, file)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """pytest-xdist's scheduler by scope, with a test's scope its `worker_group`: each
    group runs whole on one worker. (xdist's own `--dist loadgroup` marks the group in a
    test's node id, which pytest 9.2 no longer lets a plugin rewrite: every test then ran
    wherever a worker was free, and each worker made the light install's runs again.)"""
    from xdist.scheduler import LoadScopeScheduling

    class FileGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    # In collection order, not largest first: the light install's group, the longest,
    # is collected first and so starts first.
    config.option.loadscopereorder = False
    return FileGroupScheduling(config, log)  # type: ignore[arg-type]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test of a tiered folder with its folder's tier and each of a file that
    judges time under load as `serial`."""
    for item in items:
        if not item.path.is_relative_to(TESTS):
            continue
        relative = item.path.relative_to(TESTS)
        parts = relative.parts
        if len(parts) > 1 and parts[0] in FOLDER_TIERS:
            item.add_marker(FOLDER_TIERS[parts[0]])
        if relative.as_posix() in SERIAL_FILES:
            item.add_marker(pytest.mark.serial)

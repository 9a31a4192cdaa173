"""`make test`'s workers: each file's tests on one worker, and the files that share the
light install's runs (`SHARED_GROUPS`) on the same one, so a costly fixture is made once.

The end-to-end test runs pytest on two workers over a small tree of the same shape as the
project's tests, with the project's scheduler, and reads which worker ran each test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_GROUPS, worker_group

ROOT = Path(__file__).resolve().parents[1]

RECORDING_TEST = """import json, os, pathlib, time
import pytest


@pytest.mark.parametrize("n", range(3))
def test_records_its_worker(n):
    time.sleep(0.2)
    out = pathlib.Path(os.environ["RECORD"]) / f"{{os.environ['PYTEST_XDIST_WORKER']}}.jsonl"
    with out.open("a") as f:
        f.write(json.dumps({{"file": "{name}", "n": n}}) + "\\n")
"""


def test_a_files_tests_share_a_group_and_shared_files_share_one() -> None:
    groups = {worker_group(f"tests/{relative}::test_x[1]") for relative in SHARED_GROUPS}
    assert len(groups) == 1
    assert worker_group("tests/server/test_a.py::test_x") == worker_group(
        "tests/server/test_a.py::TestY::test_z[p::q]"
    )
    assert worker_group("tests/server/test_a.py::test_x") != worker_group(
        "tests/server/test_b.py::test_x"
    )


@pytest.mark.slow
def test_two_workers_run_each_group_whole_on_one_worker(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    files = [*SHARED_GROUPS, "server/test_one.py", "server/test_two.py", "test_three.py"]
    for relative in files:
        path = tree / "tests" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(RECORDING_TEST.format(name=relative))
    (tree / "tests" / "conftest.py").write_text(
        "from tests.conftest import pytest_xdist_make_scheduler  # noqa: F401\n"
    )
    (tree / "pytest.ini").write_text("[pytest]\n")
    record = tmp_path / "record"
    record.mkdir()
    env = os.environ | {"RECORD": str(record), "PYTHONPATH": str(ROOT)}
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadscope",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    worker_of: dict[str, set[str]] = {}
    for log in record.glob("*.jsonl"):
        for line in log.read_text().splitlines():
            worker_of.setdefault(json.loads(line)["file"], set()).add(log.stem)
    assert sorted(worker_of) == sorted(files)
    assert all(len(workers) == 1 for workers in worker_of.values()), worker_of
    shared = {worker for relative in SHARED_GROUPS for worker in worker_of[relative]}
    assert len(shared) == 1, worker_of
    assert len(set().union(*worker_of.values())) == 2, worker_of

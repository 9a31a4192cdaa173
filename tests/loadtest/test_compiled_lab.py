"""`lab-mypyc`: the lab's server with its request path compiled by mypyc, for the bench."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.bench import compiled_lab
from loadtest.bench.targets import OPTIONAL_SERVERS, SERVERS, target

ROOT = Path(__file__).resolve().parents[2]


def test_every_compiled_module_is_a_source_of_the_server() -> None:
    assert len(set(compiled_lab.COMPILED_MODULES)) == len(compiled_lab.COMPILED_MODULES)
    for module in compiled_lab.COMPILED_MODULES:
        assert (ROOT / module).is_file(), module
    # The app keeps its async generators, which mypyc cannot compile.
    assert "server/app.py" not in compiled_lab.COMPILED_MODULES


@pytest.mark.skipif(compiled_lab.missing() is not None, reason=str(compiled_lab.missing()))
@pytest.mark.integration
def test_a_built_copy_serves_its_compiled_modules_first(tmp_path: Path) -> None:
    compiled_lab.build(tmp_path, modules=("server/protocol/jsonrpc.py",))
    env = {**os.environ, **compiled_lab.environment_for(tmp_path)}
    probe = (
        "import server.protocol.jsonrpc as c, server.app as a; "
        "print(c.__file__); print(a.__file__); "
        "print(c.encode({'id': 1}).decode())"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    compiled, interpreted, encoded = done.stdout.split()
    assert compiled.startswith(str(tmp_path)) and compiled.endswith(".so")
    assert interpreted == str(tmp_path / "server" / "app.py")
    assert encoded == '{"id":1}'


def test_the_bench_runs_the_compiled_lab_only_when_asked_as_the_lab_is_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "lab-mypyc" in OPTIONAL_SERVERS and "lab-mypyc" not in SERVERS
    monkeypatch.setattr(compiled_lab, "compiled_server_path", lambda: tmp_path)
    compiled, lab = target("lab-mypyc", 8000), target("lab", 8000)
    assert compiled.command == lab.command and compiled.health_path == lab.health_path
    assert compiled.environment == {"PYTHONPATH": str(tmp_path), "PYTHONSAFEPATH": "1"}
    assert lab.environment == {}


def test_the_bench_refuses_a_server_it_does_not_know() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "bench", "--servers", "bare,lab,nginx"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "unknown server nginx" in done.stderr and "lab-mypyc" in done.stderr

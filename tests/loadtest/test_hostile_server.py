"""`measure --target` against a hostile server: one that trickles its replies, lists a
tool no argument fits, says `+Inf` in `/metrics`, answers an error that is a string, or
a body that is not JSON. Each is the server's fault said in one line (exit status 2),
never a traceback, and within a bounded time."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.protocol.versions import MODERN_VERSION
from tests.loadtest.hostile_server import hostile_server

#: Seconds a hostile server may hold `measure --target` (its discovery deadline is 10 s).
BOUND_S = 45.0


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    with hostile_server() as base:
        yield base


@pytest.mark.parametrize(
    ("mode", "era", "said"),
    [
        ("trickle", "both", "outran its deadline"),
        ("empty-enum", "both", "no value drawn fits the schema"),
        ("inf-metrics", "both", "process_resident_memory_bytes is '+Inf', not a size"),
        ("string-error", MODERN_VERSION, "not a JSON-RPC error object: 'boom'"),
        ("not-json", MODERN_VERSION, "without a JSON-RPC response"),
    ],
)
def test_a_hostile_server_is_said_to_be_at_fault_in_bounded_time(
    hostile: str, tmp_path: Path, mode: str, era: str, said: str
) -> None:
    command = [
        sys.executable, "-m", "loadtest", "measure", "--target", f"{hostile}/{mode}/mcp",
        "--tool", "get_weather", "--era", era, "--calls", "3", "--held-calls", "2",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=BOUND_S + 30, cwd=tmp_path
    )
    elapsed_s = time.monotonic() - started
    error = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert error.startswith("error: ") and said in error, error
    assert elapsed_s < BOUND_S

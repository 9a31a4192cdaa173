"""`python -m loadtest swarm` for CI and shaped load, live against the lab's cluster:
--fail-if's exit status each way, --html with the lab's summary, a shape's users over
time, and --find-ceiling's steps (its ceiling against the simulation's is in
`test_ceiling_live.py`, which runs alone)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from labsim.model.measured import DEFAULT_PATH
from server.harness.process import free_port

pytestmark = pytest.mark.integration

SWARM = [sys.executable, "-m", "loadtest", "swarm", "--headless", "--replicas", "1"]
#: crunch's work per call, on the replica's event loop (not in CPU workers, which run at a
#: lower priority and starve on a busy machine): one worker, as the simulation's one vCPU.
CRUNCH = ["--tools", "crunch=1", "--tool-cpu-ms", "20", "--cpu-inline-max-ms", "1000"]
CRUNCH += ["--cpu-workers", "1", "--workers", "0"]


def swarm(args: list[str], tmp_path: Path, timeout_s: float = 150) -> subprocess.CompletedProcess:
    command = [*SWARM, "--master-port", str(free_port()), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, cwd=tmp_path)


def summary_of(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_a_threshold_crossed_at_the_end_exits_1_and_says_which(tmp_path: Path) -> None:
    args = ["--workers", "0", "--users", "2", "--duration", "4", "--json", "run.json"]
    done = swarm([*args, "--fail-if", "p95_ms>0", "--fail-if", "error_share>0.5"], tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    p95 = summary_of(tmp_path / "run.json")["latency_ms"]["p95"]
    assert f"fail-if: p95_ms>0 holds (p95_ms = {p95:g})" in done.stdout
    assert "error_share>0.5" not in done.stdout


def test_no_threshold_crossed_exits_0_and_the_html_report_has_the_labs_summary(
    tmp_path: Path,
) -> None:
    args = ["--workers", "0", "--users", "2", "--duration", "4", "--html", "report.html"]
    done = swarm([*args, "--fail-if", "p95_ms>60000", "--fail-if", "error_share>0.5"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "fail-if" not in done.stdout
    page = (tmp_path / "report.html").read_text()
    assert "MRTR Lab summary" in page and "calls/s" in page and "locust" in page.lower()


def test_a_step_shape_runs_more_users_at_each_step(tmp_path: Path) -> None:
    args = ["--workers", "0", "--shape", "step", "--users", "6", "--step-users", "2"]
    done = swarm([*args, "--step-s", "3", "--duration", "9", "--json", "run.json"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "step shape up to 6 users for 9 s" in done.stderr
    timeline = summary_of(tmp_path / "run.json")["timeline"]
    # Closed loop: calls completed per second go with the users calling (2, then 4, then 6).
    first, last = (sum(row["completed"] for row in timeline[a:b]) for a, b in ((0, 3), (6, 9)))
    assert last >= 2 * first > 0, timeline


def test_the_ceiling_is_the_last_step_that_held_before_the_first_that_broke(
    tmp_path: Path,
) -> None:
    """--find-ceiling steps the rate by --rate every --step-s and judges each step by the
    calls that started in it: the ceiling is the last step that held before the first that
    broke (or the last step run, when none broke), and the simulation's answer for the same
    replicas stands beside it when a parameter file is given."""
    args = [*CRUNCH, "--rate", "8", "--find-ceiling", "--step-s", "3", "--max-steps", "4"]
    args += ["--slo-p95-ms", "60", "--params", str(DEFAULT_PATH), "--predict-round-ms", "20"]
    done = swarm([*args, "--json", "ceiling.json"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = summary_of(tmp_path / "ceiling.json")
    steps, rate = found["steps"], found["ceiling_rate_per_s"]
    assert [s["rate_per_s"] for s in steps] == [8.0 * k for k in range(1, len(steps) + 1)]
    held = [s["held"] for s in steps]
    broke = held.index(False) if False in held else None
    assert all(held[: broke if broke is not None else len(held)]), steps
    expected = None if broke == 0 else steps[(broke if broke is not None else len(steps)) - 1]
    assert rate == (expected["rate_per_s"] if expected else None), (rate, steps)
    # The search judged each step by the report's rule a moment after its end: it ends
    # at the step it found broken (or the last); calls still running at that moment can
    # tip a step either way, and then the report says where the search stopped and why.
    stopped = found["search_stopped_at_step"]
    assert len(steps) == (stopped if stopped is not None else 4), (stopped, steps)
    if broke is not None and len(steps) > broke + 1:
        assert f"step {broke + 1} broke once its last calls were answered" in done.stdout
    if broke is None and stopped is not None:
        assert f"the search stopped at step {stopped}" in done.stdout
    assert "predicted_ceiling_rate_per_s" in found, found.keys()
    # The lab's replica was read as the steps ran: what a round took of it in each.
    assert all(s["replica_busy_ms_per_round"] is not None for s in steps), steps
    if rate is not None:
        assert f"ceiling: {rate:g} calls/s" in done.stdout

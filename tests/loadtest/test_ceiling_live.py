"""--find-ceiling on the lab's own cluster finds the ceiling the simulation finds for the
same replica, the same tool work and the same SLO (within 25%).

It runs alone (`SERIAL_FILES` in tests/conftest.py): the ceiling is where one replica's
core runs out, and another test on the same two cores would take part of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from labsim.model.measured import DEFAULT_PATH
from server.harness.process import free_port

pytestmark = pytest.mark.integration

#: One replica running crunch's 20 ms of work per call on its event loop (CPU workers run
#: at a lower priority and starve on a busy machine): one worker, as the simulation's one
#: vCPU. The replica and HAProxy on CPU 0, the users on CPU 1 (--pin-cores): the load the
#: users make does not take the replica's core.
SWARM = [sys.executable, "-m", "loadtest", "swarm", "--headless", "--replicas", "1"]
SWARM += ["--tools", "crunch=1", "--tool-cpu-ms", "20", "--cpu-inline-max-ms", "1000"]
SWARM += ["--cpu-workers", "1", "--workers", "0", "--pin-cores"]
#: Steps of 3 calls/s from 15 (a round of 20 to 30 ms serves 33 to 50 a second: the
#: first step near half of it) up to 84 (a round of 13 ms was read once, with the machine's
#: other core busy: 77 a second), five seconds each, against a p95 of 250 ms: about ten
#: rounds, the knee of the latency curve, where the ceiling is what the replica serves and
#: not the luck of a step's slowest calls.
STEP_PER_S, FIRST_STREAMS, STEPS, SLO_P95_MS = 3.0, 5, 24, 250


def test_the_ceiling_found_is_the_simulations_for_the_same_replicas(tmp_path: Path) -> None:
    """The simulation is asked with the busy time per round (CPU and the wait for one) the
    replica had in the steps before the break. A step that breaks runs again at its rate
    (--confirm-breaks): a stall of the shared machine is not the ceiling."""
    args = ["--rate", f"{STEP_PER_S:g}", "--start-rate", f"{STEP_PER_S * FIRST_STREAMS:g}"]
    args += ["--find-ceiling", "--confirm-breaks", "--step-s", "5", "--max-steps", str(STEPS)]
    args += ["--slo-p95-ms", str(SLO_P95_MS), "--params", str(DEFAULT_PATH)]
    command = [*SWARM, "--master-port", str(free_port()), *args, "--json", "ceiling.json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=360, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads((tmp_path / "ceiling.json").read_text())
    steps, rate = found["steps"], found["ceiling_rate_per_s"]
    rates = sorted({s["rate_per_s"] for s in steps})
    assert rates == [STEP_PER_S * (FIRST_STREAMS + k) for k in range(len(rates))], steps
    predicted = found["predicted_ceiling_rate_per_s"]
    figures = (rate, predicted, found["predicted_round_ms"], steps, found["predicted_steps"])
    assert found["broke_at_step"] is not None, figures  # the steps reached the knee
    assert found["predicted_round_ms"] == found["replica_busy_ms_per_round"], figures
    assert rate is not None and predicted is not None, figures
    assert abs(rate - predicted) <= 0.25 * predicted, figures
    assert f"ceiling: {rate:g} calls/s" in done.stdout

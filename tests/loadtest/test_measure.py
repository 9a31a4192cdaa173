"""The measurement of the simulation's inputs: the fit, the file format, a short live run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labsim.model.measured import MEASURED_FIELDS
from loadtest.harness.haproxy import HAProxy
from loadtest.probes.replica_cpu import CpuMeter, CpuStretch, fit_cpu_per_round

MEASURED = Path(__file__).parents[2] / "labsim" / "measured.json"


def test_the_cpu_fit_separates_idle_work_from_work_per_round() -> None:
    # 0.02 CPU-s per second idle, 0.3 ms per round: the fit finds both.
    stretches = [
        CpuStretch(cpu_s=0.02 * span + 0.0003 * rounds, span_s=span, rounds=rounds)
        for span, rounds in ((5.0, 0), (5.0, 2000), (4.0, 6000))
    ]
    per_round, idle = fit_cpu_per_round(stretches)
    assert per_round == pytest.approx(0.0003)
    assert idle == pytest.approx(0.02)


def test_a_window_inside_a_metered_stretch_has_its_own_busy_share() -> None:
    # This process idles, works for 0.6 s, idles again: the window around the work
    # is busy most of its time, the whole stretch well under half.
    meter = CpuMeter([os.getpid()], every_s=0.02)
    meter.start()
    time.sleep(0.6)
    begin = time.time()
    while time.time() - begin < 0.6:
        sum(range(1000))
    end = time.time()
    time.sleep(0.8)
    whole = meter.stop(rounds=7)
    window = meter.window(begin, end)
    assert whole.rounds == 7 and whole.span_s > 1.9
    assert whole.busy_s / whole.span_s < 0.45
    # The window spans the samples inside the work; on a slow machine the sampling thread
    # (which waits for the GIL the work holds) can start late and stop early.
    assert 0.5 * (end - begin) < window.span_s <= end - begin
    assert window.busy_s / window.span_s > 0.6


def check_format(document: dict) -> None:
    assert document["command"] == "python -m loadtest measure --json labsim/measured.json"
    assert document["measured_at"].endswith("Z")
    assert set(document["values"]) == set(MEASURED_FIELDS)
    for name, kind in MEASURED_FIELDS.items():
        assert isinstance(document["values"][name], kind), name
        assert document["values"][name] > 0, name
    # An idle replica: a Python process with its libraries, tens of megabytes.
    assert 10e6 < document["replica"]["base_memory_bytes"] < 1e9


def check_plan_inputs(document: dict) -> None:
    """What `labsim plan` takes from the file: each architecture's idle replica, and a
    round of the lab's own tools (well under a millisecond of a replica's CPU)."""
    by_architecture = document["replica"]["base_memory_bytes_by_architecture"]
    assert set(by_architecture) == {"mrtr", "sticky", "sse-store"}
    assert all(10e6 < value < 1e9 for value in by_architecture.values())
    round_cpu = document["round_cpu"]
    assert 20e-6 < round_cpu["mean_s"] < 2e-3 and round_cpu["cv"] >= 0
    assert round_cpu["kind"] in ("deterministic", "exponential", "lognormal")


def test_the_committed_parameter_file_is_a_measurement_in_the_agreed_format() -> None:
    document = json.loads(MEASURED.read_text())
    check_format(document)
    held = document["details"]["held_calls"]["sticky"]
    assert document["values"]["held_call_bytes"] == round(held["rss_bytes_per_call"])


@pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")
@pytest.mark.integration
def test_a_short_live_measurement_writes_the_parameter_file(tmp_path: Path) -> None:
    out = tmp_path / "measured.json"
    command = [sys.executable, "-m", "loadtest", "measure", "--held-calls", "20", "--stretch", "1"]
    run = subprocess.run(
        [*command, "--json", str(out)], capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr
    assert "held calls" in run.stderr and "rounds" in run.stderr  # progress on stderr
    document = json.loads(out.read_text())
    check_format(document)
    check_plan_inputs(document)
    details = document["details"]
    for arch in ("sticky", "sse-store"):
        assert details["held_calls"][arch]["calls"] == 20
        assert details["held_calls"][arch]["object_graph_bytes_per_call"] > 1000
    rounds = details["rounds"]
    assert rounds["failed_calls"] == 0
    assert rounds["rounds_timed"] >= 300
    idle, light, busy = rounds["stretches"]
    assert idle["rounds"] == 0 and light["rounds"] > 0 and busy["rounds"] > 0
    # A round's body carries at least a JSON-RPC envelope and a tool name.
    assert document["values"]["request_bytes"] > 100


def test_remeasuring_held_calls_keeps_every_other_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from loadtest.calibration import measure
    from loadtest.calibration.remeasure import remeasure

    def held(arch: str, calls: int, progress: object) -> dict[str, float]:
        per_call = {"sticky": 12_345.4, "sse-store": 13_000.0}[arch]
        return {"calls": calls, "rss_bytes_per_call": per_call, "object_graph_bytes_per_call": 1}

    monkeypatch.setattr(measure, "measure_held", held)
    shipped = json.loads(MEASURED.read_text())
    again = remeasure(shipped, "held", held_calls=50)
    twice = remeasure(again, "held", held_calls=50)
    assert again["values"]["held_call_bytes"] == 12_345
    others = {k: v for k, v in shipped["values"].items() if k != "held_call_bytes"}
    assert {k: again["values"][k] for k in others} == others
    assert again["details"]["held_calls"]["sse-store"]["calls"] == 50
    assert again["details"]["rounds"] == shipped["details"]["rounds"]
    assert (again["command"], again["measured_at"]) == (shipped["command"], shipped["measured_at"])
    entry = twice["remeasured"][-1]
    assert len(twice["remeasured"]) == len(shipped.get("remeasured", [])) + 2
    assert entry["command"] == "python -m loadtest measure --only held --json labsim/measured.json"
    assert entry["values"] == ["held_call_bytes"]
    check_format(again)
    assert shipped["values"]["held_call_bytes"] != 12_345  # the file itself is left alone


def test_remeasuring_needs_a_parameter_file(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "loadtest", "measure", "--only", "held"]
    for extra in ([], ["--json", str(tmp_path / "absent.json")]):
        run = subprocess.run([*command, *extra], capture_output=True, text=True, timeout=60)
        assert run.returncode != 0
        assert "parameter file" in run.stderr


def test_remeasuring_idle_memory_keeps_every_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from loadtest.calibration import measure
    from loadtest.calibration.remeasure import remeasure

    idle = {"mrtr": 61_000_000, "sticky": 62_000_000, "sse-store": 70_000_000}
    monkeypatch.setattr(measure, "measure_base_memory", lambda progress: dict(idle))
    shipped = json.loads(MEASURED.read_text())
    again = remeasure(shipped, "memory")
    assert again["replica"] == {
        "base_memory_bytes": idle["mrtr"],
        **{"base_memory_bytes_by_architecture": idle},
    }
    assert again["values"] == shipped["values"]
    assert again["remeasured"][-1]["values"] == ["replica"]
    check_plan_inputs({**again, "round_cpu": {"mean_s": 2e-4, "cv": 0.3, "kind": "lognormal"}})

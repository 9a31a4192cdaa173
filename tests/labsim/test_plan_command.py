"""`python -m labsim plan` on the command line: the JSON that `loadtest verify-plan` reads,
every input printed with its source, the figure, and bad inputs refused at once by name."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labsim.model import measured
from labsim.study.plan import FORMAT_VERSION

ROOT = Path(__file__).resolve().parents[2]
QUICK = ["--answer-timeout-s", "30", "--measure-s", "60", "--replications", "2"]
REQUEST_FIELDS = {
    "rate_per_s", "think_time_median_s", "think_time_sigma", "tools", "tool_mix",
    "never_answer_share", "round_cpu_ms", "round_cpu_cv", "round_cpu_kind", "slo_p95_ms",
    "slo_completed_share", "connection_limit", "memory_gb_per_replica", "vcpus_per_replica",
    "answer_timeout_s", "seed",
}  # fmt: skip
VERDICT_FIELDS = {
    "replicas", "meets", "p95_ms", "p95_ms_ci", "completed_share", "completed_share_ci",
    "marginal", "use",
}  # fmt: skip


def labsim_plan(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "labsim", "plan", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout_s,
    )


@pytest.mark.slow
def test_the_plan_file_has_what_verify_plan_reads(tmp_path: Path) -> None:
    out, figure = tmp_path / "plan.json", tmp_path / "plan.png"
    args = ["--rate", "10", "--think-time-median-s", "10", "--connection-limit", "24",
            "--vcpus", "1", "--memory-gb-per-replica", "2", "--round-cpu-ms", "2",
            "--round-cpu-cv", "0.5",
            "--json", str(out), "--plot", str(figure), *QUICK]  # fmt: skip
    done = labsim_plan(*args)
    assert done.returncode == 0, done.stderr
    plan = json.loads(out.read_text())
    assert plan["version"] == FORMAT_VERSION
    assert plan["command"].startswith("python -m labsim plan --rate 10")
    assert set(plan["request"]) >= REQUEST_FIELDS
    assert plan["request"]["round_cpu_ms"] == 2.0
    assert (plan["request"]["round_cpu_kind"], plan["request"]["round_cpu_cv"]) == (
        "lognormal",
        0.5,
    )
    assert plan["params"]["cluster"]["connection_limit"] == 24
    assert any("think time" in line for line in plan["assumptions"])
    assert not any("memory per held legacy call" in line for line in plan["assumptions"])
    for name, answer in plan["architectures"].items():
        assert set(answer) >= VERDICT_FIELDS, name
        assert {"cpu", "memory", "connections"} <= set(answer["use"])
        assert answer["binding"] in (
            "none",
            "cpu",
            "memory",
            "connections",
            "latency",
            "completion",
        )
        assert answer["base_memory_bytes"] > 0
        if answer["replicas"] > 1:
            assert set(answer["one_fewer"]) >= VERDICT_FIELDS
            assert answer["one_fewer"]["replicas"] == answer["replicas"] - 1
        else:
            assert "one_fewer" not in answer and answer["one_fewer_reason"]
    assert figure.stat().st_size > 10_000
    # Every input is printed with where it comes from.
    for group in ("measured:", "stated:", "assumption:", "the lab's configuration:"):
        assert group in done.stdout
    assert "server work per round: lognormal, mean 2 ms, cv 0.5 (stated: --round-cpu-ms" in (
        done.stdout
    )


@pytest.mark.slow
def test_absurd_inputs_are_refused_by_flag_before_any_run() -> None:
    for args, flag in ((["--rate", "1e9"], "--rate"), (["--measure-s", "1e12"], "--measure-s")):
        started = time.perf_counter()
        done = labsim_plan(*args, timeout_s=30)
        assert done.returncode == 2
        assert flag in done.stderr and "at most 1,000,000" in done.stderr
        assert time.perf_counter() - started < 15
        assert done.stdout == ""


@pytest.mark.slow
def test_an_slo_below_the_latency_floor_is_said_at_once() -> None:
    started = time.perf_counter()
    done = labsim_plan("--slo-p95-ms", "0.5", *QUICK, timeout_s=60)
    assert done.returncode == 1
    assert done.stdout.count("no fleet meets a p95 of 0.5 ms") == 3
    assert "more replicas shorten only the queues" in done.stdout
    assert time.perf_counter() - started < 30


@pytest.mark.slow
def test_set_reaches_the_model_and_refuses_what_the_request_sets(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    done = labsim_plan("--rate", "2", "--set", "cluster.health_check_interval_s=1",
                       "--set", "client.max_retries=8", "--json", str(out), *QUICK)  # fmt: skip
    assert done.returncode == 0, done.stderr
    params = json.loads(out.read_text())["params"]
    assert params["cluster"]["health_check_interval_s"] == 1.0
    assert params["client"]["max_retries"] == 8
    assert "health check every 1 s" in done.stdout
    assert "8 times a call; starts a broken call again 2 times (stated: --set)" in done.stdout
    refused = labsim_plan("--set", "workload.arrival_rate_per_s=5")
    assert refused.returncode == 2 and "--rate" in refused.stderr
    unknown = labsim_plan("--set", "cluster.nonsense=1")
    assert unknown.returncode == 2 and "cluster.nonsense" in unknown.stderr


@pytest.mark.slow
def test_a_parameter_file_key_the_model_does_not_know_is_refused(tmp_path: Path) -> None:
    payload = json.loads(measured.DEFAULT_PATH.read_text())
    payload["replica"]["base_memory_mb"] = 50
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(payload))
    done = labsim_plan("--params", str(path))
    assert done.returncode == 2
    assert "replica.base_memory_mb" in done.stderr


@pytest.mark.slow
def test_help_shows_the_measured_round_as_the_default() -> None:
    done = labsim_plan("--help")
    text = " ".join(done.stdout.split())
    shipped = measured.load()
    overhead_ms = shipped.values["request_overhead_s"] * 1e3
    mean_ms = shipped.round_cpu.mean_s * 1e3 if shipped.round_cpu else overhead_ms
    assert f"(default: the parameter file's round; the lab's: {mean_ms:.4g})" in text
    assert "(default: 0.999)" in text and "(default: 1024)" in text

"""Short smokes of the benchmark and the calibration: they run and report the right shape
(not speed, not accuracy: those are measured by the commands, not asserted here)."""

from __future__ import annotations

import shutil

import pytest

from loadtest.bench import parse_wrk, run_bench
from loadtest.microbench import seal_open_microbench

WRK_OUTPUT = """Running 1s test @ http://127.0.0.1:1/mcp
  1 threads and 10 connections
  Latency Distribution
     50%  587.00us
     75%    1.20ms
     99%    1.62ms
  14388 requests in 1.00s, 2.1MB read
  Non-2xx or 3xx responses: 3
Requests/sec:  14388.42
"""


def test_wrk_output_is_parsed_in_milliseconds() -> None:
    assert parse_wrk(WRK_OUTPUT) == {
        "requests_per_s": 14388.42,
        "p50_ms": 0.587,
        "p99_ms": 1.62,
        "non_2xx": 3,
    }


def test_seal_open_microbenchmark_reports_token_size_and_times() -> None:
    report = seal_open_microbench(1024, number=200, repeat=2)
    assert report["token_bytes"] > report["plaintext_bytes"] > 1024
    assert report["seal_us"] > 0 and report["open_us"] > 0
    assert report["aead_encrypt_decrypt_us"] > 0


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_bench_smoke_reports_every_server_round_and_ratio() -> None:
    report = run_bench(duration_s=1, connections=4, passes=1)
    assert set(report["servers"]) == {"bare", "lab", "sdk"}
    assert report["servers"]["lab"]["result_types"] == ["input_required", "complete"]
    assert report["servers"]["sdk"]["result_types"] == ["input_required", "complete"]
    for server in report["servers"].values():
        for label in ("round1", "retry"):
            assert server[label]["requests_per_s"] > 0
            assert server[label]["non_2xx"] == 0
    assert set(report["ratios"]) == {
        "lab/bare_round1", "lab/bare_retry", "lab/sdk_round1", "lab/sdk_retry",
    }  # fmt: skip
    assert report["in_process"]["lab_round1_us"] > 0


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed")
def test_calibrate_smoke_reports_predicted_and_measured_side_by_side() -> None:
    from loadtest.calibrate import run_calibration

    report = run_calibration((10.0, 20.0, 30.0), duration_s=4)
    assert report["calibrated"]["service_ms"] > 0
    assert report["calibrated"]["network_ms"] >= 0
    assert [row["offered_per_s"] for row in report["levels"]] == [10.0, 20.0, 30.0]
    for row in report["levels"]:
        assert row["measured"]["completed"] > 0 and row["measured"]["failed"] == 0
        assert set(row["ratio"]) == {"throughput_per_s", "p50_ms", "p95_ms"}
        assert row["predicted"]["throughput_per_s"] > 0

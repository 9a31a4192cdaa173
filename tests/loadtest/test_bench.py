"""Short smokes of the benchmark: it runs and reports the right shape
(not speed, not accuracy: those are measured by the commands, not asserted here)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadtest.bench.microbench import seal_open_microbench
from loadtest.bench.report import print_report
from loadtest.bench.rounds import KINDS, Round, call_body
from loadtest.bench.run import run_bench, summarise
from loadtest.bench.targets import SERVERS, RunningTarget, missing, target
from loadtest.bench.wrk import WrkRunError, lua_script, parse_wrk, run_wrk
from server.harness.process import free_port

needs_wrk = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")

WRK_OUTPUT = """Running 1s test @ http://127.0.0.1:1/mcp
  1 threads and 10 connections
  Latency Distribution
     50%  587.00us
     75%    1.20ms
     99%    1.62ms
  14388 requests in 1.00s, 2.1MB read
  Non-2xx or 3xx responses: 3
Requests/sec:  14388.42
Transfer/sec:      2.10MB
Wrong answers: 5
"""


def test_wrk_output_is_parsed_in_milliseconds() -> None:
    assert parse_wrk(WRK_OUTPUT) == {
        "requests_per_s": 14388.42,
        "p50_ms": 0.587,
        "p99_ms": 1.62,
        "requests": 14388,
        "non_2xx": 3,
        "wrong": 5,
    }


def test_the_wrk_script_checks_the_result_type_it_expects() -> None:
    script = lua_script(Round("open", "update_work_item", call_body(7), "complete"))
    assert 'wrk.headers["Mcp-Name"] = "update_work_item"' in script
    assert 'expect = \'"resultType"%s*:%s*"complete"\'' in script
    assert "function response(status, headers, body)" in script


def _pass(rps: float, p50: float = 1.0, p99: float = 4.0) -> dict[str, float]:
    return {"requests_per_s": rps, "p50_ms": p50, "p99_ms": p99}


def test_ratios_are_taken_within_each_pass_and_spread_over_passes() -> None:
    passes = {
        "bare": {kind: [_pass(1000), _pass(500), _pass(800)] for kind in KINDS},
        "lab": {kind: [_pass(800, p99=6.0), _pass(450), _pass(400)] for kind in KINDS},
    }
    report = summarise(passes)
    ratio = report["ratios"]["lab/bare round1"]
    assert ratio == {"median": 0.8, "min": 0.5, "max": 0.9}
    assert report["servers"]["lab"]["seal"]["requests_per_s"] == 450  # the median pass
    assert report["p99_over_p50"]["open"]["bare"] == 4.0
    assert report["p99_over_p50"]["open"]["lab/bare"] == 1.0  # passes 1.5, 1.0, 1.0


def test_the_floor_is_reported_over_bare_from_the_same_passes(
    capsys: pytest.CaptureFixture,
) -> None:
    passes = {
        "bare": {kind: [_pass(1000), _pass(500), _pass(800)] for kind in KINDS},
        "floor": {kind: [_pass(1200), _pass(450), _pass(800)] for kind in KINDS},
        "lab": {kind: [_pass(800), _pass(450), _pass(400)] for kind in KINDS},
    }
    report = summarise(passes)
    assert report["floor_over_bare"]["seal"] == {"median": 1.0, "min": 0.9, "max": 1.2}
    assert report["ratios"]["lab/floor seal"]["median"] == pytest.approx(2 / 3)  # 0.67, 1, 0.5
    report.update(connections=10, duration_s=1, passes=3, missing={}, stack="uvicorn")
    print_report(report)
    floor_line = capsys.readouterr().out.splitlines()[-1]
    assert floor_line.startswith("floor's req/s over bare's")
    assert "seal 1.00x (0.90-1.20)" in floor_line


def test_seal_open_microbenchmark_reports_token_size_and_times() -> None:
    report = seal_open_microbench(1024, number=200, repeat=2)
    assert report["token_bytes"] > report["plaintext_bytes"] > 1024
    assert report["seal_us"] > 0 and report["open_us"] > 0
    assert report["aead_encrypt_decrypt_us"] > 0


@pytest.fixture(scope="module")
def bare() -> Iterator[RunningTarget]:
    port = free_port()
    server = RunningTarget(target("bare", port), port)
    yield server
    server.stop()


@needs_wrk
@pytest.mark.integration
def test_a_non_2xx_response_fails_the_run(bare: RunningTarget) -> None:
    timed = bare.rounds["round1"]
    with pytest.raises(WrkRunError, match="non-2xx"):
        run_wrk(bare.url.replace("/mcp", "/nowhere"), timed, duration_s=1, connections=2)


@needs_wrk
@pytest.mark.integration
def test_an_answer_of_the_wrong_kind_fails_the_run(bare: RunningTarget) -> None:
    # The bare endpoint answers `complete`: a run expecting input_required must not count.
    timed = bare.rounds["seal"]
    expecting = Round(timed.kind, timed.tool, timed.body, "input_required")
    with pytest.raises(WrkRunError, match="wrong"):
        run_wrk(bare.url, expecting, duration_s=1, connections=2)


#: The servers the bench smoke below times: its wrk runs check every round of theirs.
SMOKED = ("bare", "lab")


@needs_wrk
@pytest.mark.parametrize("name", [n for n in (*SERVERS, "floor") if n not in SMOKED])
@pytest.mark.integration
def test_every_server_answers_every_round_correctly_under_wrk(name: str) -> None:
    if why := missing(name):
        pytest.skip(why)
    port = free_port()
    server = RunningTarget(target(name, port), port)  # walks the rounds and checks them
    try:
        assert set(server.rounds) == set(KINDS)
        for timed in server.rounds.values():
            sample = run_wrk(server.url, timed, duration_s=1, connections=2)
            assert sample["requests"] > 0 and sample["non_2xx"] == 0 and sample["wrong"] == 0
    finally:
        server.stop()


@needs_wrk
@pytest.mark.integration
def test_bench_smoke_reports_every_round_ratio_and_tail(capsys: pytest.CaptureFixture) -> None:
    report = run_bench(duration_s=1, connections=4, passes=1, servers=SMOKED, micro=False)
    assert set(report["servers"]) == set(SMOKED)
    for server in report["servers"].values():
        # Every server answers every round correctly under wrk (each run would raise else).
        assert set(server) == set(KINDS)
        for sample in server.values():
            assert sample["requests_per_s"] > 0 and sample["wrong"] == 0
            assert sample["requests"] > 0 and sample["non_2xx"] == 0
            # CPU per request is the process's user time plus the kernel's on its behalf.
            user, kernel = sample["user_us_per_request"], sample["kernel_us_per_request"]
            assert user > 0 and kernel >= 0
            assert sample["cpu_us_per_request"] == pytest.approx(user + kernel)
    assert set(report["ratios"]) == {f"lab/bare {kind}" for kind in KINDS}
    assert set(report["p99_over_p50"]["shed"]) == {"bare", "lab", "lab/bare"}
    # The lab's collections are read from its /metrics around each timed run.
    gc_rates = report["lab_gc_per_10k_requests"]
    assert set(gc_rates) == set(KINDS)
    assert all(len(gens) == 3 and min(gens) >= 0 for gens in gc_rates.values())
    # The printed tables name every ratio and end no line in blanks (the README copies them).
    print_report(report)
    printed = capsys.readouterr().out
    assert "lab's req/s over each peer's" in printed and "\nbare     " in printed
    assert all(line == line.rstrip() for line in printed.splitlines())


@pytest.mark.integration
def test_held_calls_are_measured_on_the_lab_and_on_the_sdks_own_legacy_server() -> None:
    from loadtest.bench.held_compare import compare_held

    report = compare_held(calls=60)  # more than the warm-up, so memory must grow
    assert report["lab"]["rss_bytes_per_call"] > 0 and report["sdk"]["rss_bytes_per_call"] > 0
    assert report["lab"]["object_graph_bytes_per_call"] > 0
    assert report["lab/sdk"] > 0


@pytest.mark.slow
def test_in_process_microbenchmark_times_every_round_kind_on_both_apps() -> None:
    from loadtest.bench.microbench import in_process_microbench

    report = in_process_microbench(number=50)
    assert set(report) == set(KINDS)
    for kind in KINDS:
        assert report[kind]["bare_us"] > 0 and report[kind]["lab_us"] > 0
    assert report["shed"]["tool_us"] > 0


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.integration
def test_instructions_per_request_are_counted_live_on_each_server() -> None:
    from loadtest.bench.instructions import count_instructions

    counts = count_instructions(kinds=("round1", "seal"), requests=5)
    assert set(counts) == {"bare", "lab"}
    for per_kind in counts.values():
        assert set(per_kind) == {"round1", "seal"}
        # A request through uvicorn and an app is tens of thousands of instructions at least.
        assert all(n > 10_000 for n in per_kind.values())


def test_instruction_counts_print_each_server_over_bare(capsys: pytest.CaptureFixture) -> None:
    from loadtest.bench.instructions import print_instructions

    counts = {
        "bare": {"round1": 250_000.0, "seal": 260_000.0},
        "lab": {"round1": 330_000.0, "seal": 400_000.0},
        "lab-mypyc": {"round1": 300_000.0, "seal": 350_000.0},
    }
    print_instructions(counts, 400)
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].split() == ["lab/bare", "1.32x", "1.54x"]
    assert lines[-1].split() == ["lab-mypyc/bare", "1.20x", "1.35x"]
    assert lines[4].split() == ["lab-mypyc", "300", "350"]


def test_instructions_are_counted_on_python_servers_only() -> None:
    from loadtest.bench.instructions import count_instructions
    from loadtest.config import LoadTestError

    with pytest.raises(LoadTestError, match="not ts-hmac"):
        count_instructions(servers=("bare", "ts-hmac"), requests=5)


def test_an_older_server_is_given_only_the_bench_options_it_knows() -> None:
    from loadtest.bench.commit_tree import known_options

    options = ["--shed-every-units", "1", "--max-cpu-calls-per-principal", "0"]
    older_help = "  --shed-every-units N  units before shedding\n  --rate-per-principal PER_S"
    assert known_options(options, older_help) == ["--shed-every-units", "1"]
    assert known_options(options, older_help + "\n  --max-cpu-calls-per-principal N") == options


def test_a_commit_that_does_not_exist_is_refused_before_anything_starts() -> None:
    from loadtest.bench.commit_tree import checked_out
    from loadtest.config import LoadTestError

    with pytest.raises(LoadTestError, match="no commit"), checked_out("no-such-revision"):
        pass


def test_another_commit_is_reported_over_bare_from_the_same_passes(
    capsys: pytest.CaptureFixture,
) -> None:
    passes = {
        "bare": {kind: [_pass(1000), _pass(500), _pass(800)] for kind in ("round1", "retry")},
        "lab": {kind: [_pass(800), _pass(450), _pass(400)] for kind in ("round1", "retry")},
        "lab@abc1234": {kind: [_pass(900), _pass(500), _pass(600)] for kind in ("round1", "retry")},
    }
    report = summarise(passes)
    assert report["over_bare"]["lab@abc1234"]["retry"] == {"median": 0.9, "min": 0.75, "max": 1.0}
    assert report["over_bare"]["lab"]["round1"]["median"] == 0.8
    assert report["ratios"]["lab/lab@abc1234 round1"]["median"] == pytest.approx(8 / 9)
    report.update(commits={"lab@abc1234": "abc1234" + "0" * 33}, connections=10, duration_s=1)
    report.update(passes=3, missing={}, stack="uvicorn")
    print_report(report)
    printed = capsys.readouterr().out
    assert "each server's req/s over bare's" in printed
    assert "\nlab@abc1234 0.90x (0.75-1.00)    0.90x (0.75-1.00)\n" in printed


@pytest.mark.integration
def test_another_commits_server_runs_from_its_own_tree_which_is_removed_after() -> None:
    from loadtest.bench.commit_tree import checked_out

    with checked_out("HEAD") as tree:
        assert (tree.path / "server" / "app.py").is_file()
        assert not (tree.path / "loadtest").exists()  # the server only
        port = free_port()
        server = RunningTarget(tree.target(port), port)  # walks the rounds and checks them
        try:
            assert server.process is not None
            assert Path(f"/proc/{server.process.pid}/cwd").resolve() == tree.path.resolve()
            assert set(server.rounds) == set(KINDS)
        finally:
            server.stop()
    assert tree.name.startswith("lab@") and not tree.path.exists()

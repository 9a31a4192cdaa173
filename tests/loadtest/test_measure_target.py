"""One tool of any MCP server measured as a client: the fit of a round's service time, and
a short live measurement of the lab's own server run as a stranger would run it."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from labsim.model.measured import parse
from loadtest.calibration.round_fit import from_outside, from_samples
from server.harness.process import ServerProcess, free_port


@pytest.mark.parametrize(
    ("draw", "kind"),
    [
        (lambda rng: 0.005, "deterministic"),
        (lambda rng: rng.expovariate(1 / 0.005), "exponential"),
        (lambda rng: 0.005 * rng.lognormvariate(0, 0.4), "lognormal"),
    ],
)
def test_the_kind_that_fits_round_by_round_samples_is_found(draw: object, kind: str) -> None:
    rng = random.Random(7)
    fit = from_samples([draw(rng) for _ in range(400)])  # type: ignore[operator]
    assert fit.kind == kind and fit.method == "samples"
    assert fit.mean_s == pytest.approx(0.005 * (1.08 if kind == "lognormal" else 1), rel=0.15)
    round_cpu = fit.as_round_cpu()
    # As labsim takes it: an exponential's cv is 1, a deterministic round's 0.
    assert round_cpu["cv"] == {"deterministic": 0.0, "exponential": 1.0}.get(kind, round_cpu["cv"])


def test_seen_from_outside_the_service_is_the_latency_beyond_the_floors() -> None:
    rng = random.Random(3)
    wire = [0.002 + rng.expovariate(1 / 0.0005) for _ in range(4000)]
    floor = [0.002 + rng.expovariate(1 / 0.0005) for _ in range(4000)]
    rounds = [w + rng.expovariate(1 / 0.004) for w in wire]
    fit = from_outside(rounds, floor)
    assert fit.mean_s == pytest.approx(0.004, rel=0.1)
    assert fit.cv == pytest.approx(1.0, abs=0.15) and fit.kind == "exponential"
    with pytest.raises(ValueError, match="cannot be told"):
        from_outside(floor, rounds)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The lab's server started alone, as someone else's server would be."""
    log = tmp_path_factory.mktemp("target") / "server.log"
    process = ServerProcess(port=free_port(), replica_id="target", log_path=log)
    process.start()
    yield process
    process.stop()


@pytest.mark.integration
def test_measure_target_writes_a_parameter_file_labsim_reads(
    server: ServerProcess, tmp_path: Path
) -> None:
    out = tmp_path / "quote.json"
    command = [
        sys.executable, "-m", "loadtest", "measure", "--target", f"{server.base_url}/mcp",
        "--tool", "quote", "--arguments", '{"cpu_ms": 3}', "--pid", str(server.pid),
        "--calls", "30", "--held-calls", "0", "--json", str(out),
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    document = json.loads(out.read_text())
    # Both eras measured; the round's CPU read on the process: quote's 3 ms and the
    # request's own work, the same every round.
    assert set(document["details"]["eras"]) == {"mrtr", "legacy"}
    assert 0.003 <= document["round_cpu"]["mean_s"] < 0.006
    assert document["round_cpu"]["kind"] == "deterministic"
    assert document["target"] == f"{server.base_url}/mcp"
    assert document["values"]["request_bytes"] > 100
    assert document["replica"]["base_memory_bytes"] > 10e6
    # labsim reads every field it wrote.
    measurement = parse(document, str(out))
    assert measurement.round_cpu is not None
    assert measurement.round_cpu.mean_s == document["round_cpu"]["mean_s"]
    assert measurement.base_memory_bytes == document["replica"]["base_memory_bytes"]


@pytest.mark.integration
def test_measure_target_refuses_what_it_cannot_measure(server: ServerProcess) -> None:
    url = f"{server.base_url}/mcp"
    base = [sys.executable, "-m", "loadtest", "measure", "--target", url, "--calls", "3"]
    for extra, said in (
        ([], "--tool"),
        (["--tool", "quote", "--arguments", "[1]"], "JSON object"),
        (["--tool", "nope"], "lists no tool 'nope'; it lists: "),
    ):
        run = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and said in run.stderr, run.stderr[-1000:]

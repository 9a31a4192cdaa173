"""verify-plan against a deployment the lab did not start: a replica of a server built on
the official Python SDK (`sdk_server.py`), a plan of two of its tools under their own
names, the plan's workload run against it and judged as the lab's cluster is judged, with
what the lab cannot see of a replica it does not run said rather than judged."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from loadtest.probes.held_memory import rss_bytes
from loadtest.probes.replica_cpu import cpu_seconds
from loadtest.verify.deployment_verdict import constraint_states, held
from loadtest.verify.replica_metrics import MetricsSampler, parse_process_figures
from server.harness.process import free_port
from tests.loadtest.test_target import SdkServer, sdk_server  # noqa: F401

pytestmark = pytest.mark.integration


def era(rounds: int, mean_ms: float, request_bytes: int, response_bytes: int) -> dict:
    return {
        "rounds_per_call": rounds,
        "round_cpu": {"mean_ms": mean_ms, "cv": 0.5, "kind": "lognormal"},
        "request_bytes_per_round": request_bytes,
        "response_bytes_per_round": response_bytes,
        "calls": 20,
        "failed": 0,
    }


def parameters(*tools: str) -> dict:
    """A parameter file of the SDK server's tools, its figures stated by hand: book_room
    a form and its answer (two rounds), summarize about 10 ms of work in one."""
    figures = {"book_room": era(2, 1.5, 420, 310), "summarize": era(1, 10.0, 200, 900)}
    return {
        "command": "python -m loadtest measure --target http://127.0.0.1:8931/mcp",
        "measured_at": "2026-12-07T05:00:00Z",
        "target": "http://127.0.0.1:8931/mcp",
        "values": {"request_bytes": 380, "response_bytes": 260, "network_rtt_s": 0.0005},
        "round_cpu": {"mean_s": 0.0012, "cv": 0.5, "kind": "lognormal"},
        "tools": {tool: {"2026-07-28": figures.get(tool, era(1, 1.0, 200, 200))} for tool in tools},
    }


def make_plan(tmp_path: Path, *tools: str) -> Path:
    """`labsim plan` of the tools at 4 calls/s: one replica meets, by far."""
    params, plan = tmp_path / "server.json", tmp_path / "plan.json"
    params.write_text(json.dumps(parameters(*tools)))
    command = [
        sys.executable, "-m", "labsim", "plan", "--params", str(params),
        "--tool-mix", ",".join(f"{tool}=1" for tool in tools), "--rate", "4",
        "--think-time-median-s", "0.2", "--answer-timeout-s", "5", "--slo-p95-ms", "1000",
        "--measure-s", "30", "--replications", "1", "--max-replications", "1",
        "--max-replicas", "3", "--json", str(plan),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return plan


def verify(plan: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "loadtest", "verify-plan", str(plan), "--target", url,
               "--replicas", "1", *extra]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def test_a_plan_is_judged_on_the_deployment_and_says_what_it_could_not_see(
    sdk_server: SdkServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    plan, out = make_plan(tmp_path, "book_room", "summarize"), tmp_path / "verified.json"
    done = verify(plan, sdk_server.url, "--duration", "6", "--warmup", "1", "--json", str(out))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    document = json.loads(out.read_text())
    assert document["judged"] and document["target"] == sdk_server.url
    entry = document["architectures"]["mrtr"]
    assert entry["verdict_held"] and entry["plan"]["meets"] is True
    live = entry["live"]
    assert live["meets"] and live["completed"] > 10 and live["failed"] == 0
    assert live["constraints"]["latency"] == "held"
    assert live["constraints"]["completion"] == "held"
    for unseen in ("cpu", "memory", "connections"):
        assert live["constraints"][unseen].startswith("not seen"), live["constraints"]
        assert live["use"][unseen] is None
    # The plan's tools were called under their own names, in its mix, at its rate.
    assert "--tools book_room=0.5,summarize=0.5" in entry["command"]
    assert "--rate 4.0" in entry["command"]
    assert "cpu: not seen: the replicas' CPU (give --replica-metrics" in done.stdout
    assert "live not seen" in done.stdout and "every verdict held" in done.stdout


def test_a_plan_of_tools_the_deployment_does_not_list_is_refused_before_anything_runs(
    sdk_server: SdkServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    plan = make_plan(tmp_path, "book_room", "book_flight")
    started = time.monotonic()
    done = verify(plan, sdk_server.url)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "the plan's tools 'book_flight' are not listed by" in done.stderr
    assert "summarize" in done.stderr  # what it does list
    assert time.monotonic() - started < 30  # no swarm ran


@pytest.fixture
def exporter(sdk_server: SdkServer) -> Iterator[str]:  # noqa: F811
    """A `/metrics` beside the replica stating its process's CPU time and resident memory,
    as a process collector does."""
    pid = sdk_server.process.pid

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = (
                "# TYPE process_cpu_seconds_total counter\n"
                f"process_cpu_seconds_total {cpu_seconds(pid)}\n"
                f"process_resident_memory_bytes {rss_bytes(pid)}\n"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()


def test_replicas_exposing_process_figures_are_seen(sdk_server: SdkServer, exporter: str) -> None:  # noqa: F811
    sampler = MetricsSampler([exporter], every_s=0.1).start()
    start = time.time()
    deadline = start + 1.0
    with httpx.Client() as http:  # some work for the replica while it is watched
        while time.time() < deadline:
            http.get(sdk_server.url.removesuffix("/mcp") + "/nowhere")
    sampler.stop()
    seen = sampler.per_replica(start - 0.5, time.time() + 0.5, workers=1)
    assert set(seen) == {exporter}
    assert seen[exporter]["peak_rss_bytes"] > 10 * 2**20
    assert 0 <= seen[exporter]["cpu_utilization"] < 1.5
    states = constraint_states([], metrics_seen=True, refused=0)
    assert states["cpu"] == states["memory"] == "held"
    assert states["connections"].startswith("not seen")


def test_process_figures_are_read_and_nonsense_is_not() -> None:
    text = (
        "# HELP process_cpu_seconds_total Total user and system CPU time\n"
        "process_cpu_seconds_total 12.5\n"
        "process_resident_memory_bytes +Inf\n"
    )
    assert parse_process_figures(text) == (12.5, None)
    assert parse_process_figures("process_resident_memory_bytes 2.5e7\n") == (None, 2.5e7)
    assert constraint_states(["connections"], metrics_seen=False, refused=3)["connections"] == (
        "broken: 3 answers 503 reached the callers"
    )


def test_a_plans_miss_on_what_the_run_could_not_see_is_neither_borne_out_nor_contradicted() -> None:
    unseen = constraint_states([], metrics_seen=False, refused=0)
    seen = constraint_states([], metrics_seen=True, refused=0)
    live = {"meets": True, "constraints": unseen}
    missed_on_cpu = SimpleNamespace(replicas=1, meets=False, broke=("cpu",), marginal=False)
    missed_on_latency = SimpleNamespace(replicas=1, meets=False, broke=("latency",), marginal=False)
    assert held(live, missed_on_cpu) is None  # type: ignore[arg-type]
    assert held({"meets": True, "constraints": seen}, missed_on_cpu) is False  # type: ignore[arg-type]
    assert held(live, missed_on_latency) is False  # type: ignore[arg-type]
    met = SimpleNamespace(replicas=2, meets=True, broke=(), marginal=False)
    assert held(live, met) is True  # type: ignore[arg-type]
    assert held(live, None) is None

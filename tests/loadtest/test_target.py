"""A server nobody on the project wrote, as a target: the official Python SDK's
`MCPServer` with three tools of the test's own (`tests/loadtest/sdk_server.py`), on its
defaults (2025-11-25 answers come as SSE). Discovered in both eras, measured tool by tool
with every answer valid; what cannot be measured refused in one line before anything
starts."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from loadtest.bench.peers import typescript
from loadtest.target import TargetError, discover
from server.harness.process import free_port

pytestmark = pytest.mark.integration

SERVER = Path(__file__).with_name("sdk_server.py")
TS_SERVER = Path(__file__).with_name("ts_server.mjs")


class SdkServer:
    """An SDK's server as a child process on a port of its own (the Python SDK's by
    default; `command` runs another, given its port)."""

    def __init__(
        self,
        log: Path,
        *mode: str,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log.open("w")
        argv = (
            [*command, str(self.port)]
            if command
            else [sys.executable, str(SERVER), str(self.port), *mode]
        )
        self.process = subprocess.Popen(
            argv, stdout=self.log, stderr=self.log, env={**os.environ, **(env or {})}
        )

    def wait_until_listening(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the SDK server exited"
            try:
                httpx.get(self.url, timeout=1.0)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise TimeoutError(f"{self.url} did not listen within {timeout_s} s")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def sdk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    server = SdkServer(tmp_path_factory.mktemp("sdk") / "server.log")
    try:
        server.wait_until_listening()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def legacy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    """The same server as one built before 2026-07-28 would be: 2025-11-25 alone."""
    server = SdkServer(tmp_path_factory.mktemp("sdk-legacy") / "server.log", "legacy-only")
    try:
        server.wait_until_listening()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    """The same three tools on the official TypeScript SDK v2."""
    if typescript.missing():
        pytest.skip(typescript.missing() or "")
    node = typescript.command(0, "plain")[0]
    server = SdkServer(
        tmp_path_factory.mktemp("ts") / "server.log",
        command=[node, str(TS_SERVER)],
        env=typescript.environment(),
    )
    try:
        server.wait_until_listening()
        yield server
    finally:
        server.stop()


def _measure(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "loadtest", "measure", "--target", url, *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=240)


def test_the_sdk_server_is_discovered_in_both_eras_with_its_tools(sdk_server: SdkServer) -> None:
    target = discover(sdk_server.url)
    assert target.eras == ("2026-07-28", "2025-11-25")
    assert set(target.tools) == {"book_room", "transfer", "summarize"}
    assert target.tools["transfer"].input_schema["properties"]["amount"]["type"] == "integer"
    assert target.server_name == "rooms-and-money"


@pytest.mark.parametrize("tool", ["book_room", "transfer", "summarize"])
def test_measure_writes_the_tools_own_figures_in_both_eras(
    sdk_server: SdkServer, tool: str, tmp_path: Path
) -> None:
    out = tmp_path / f"{tool}.json"
    run = _measure(
        sdk_server.url, "--tool", tool, "--era", "both", "--pid", str(sdk_server.process.pid),
        "--calls", "12", "--held-calls", "0", "--json", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    document = json.loads(out.read_text())
    figures = document["tools"][tool]
    assert set(figures) == {"2026-07-28", "2025-11-25"}
    for era, found in figures.items():
        # Every call completed: no answer the server rejected, in either era.
        assert found["failed"] == 0, (era, document["details"]["eras"])
        assert found["round_cpu"]["mean_ms"] > 0 and found["round_cpu"]["kind"]
        assert found["request_bytes_per_round"] > 0
    if tool == "book_room":
        assert figures["2026-07-28"]["rounds_per_call"] == 2
    if tool == "summarize":
        assert figures["2026-07-28"]["rounds_per_call"] == 1
        # About 10 ms of CPU a call, read on the process.
        assert figures["2026-07-28"]["round_cpu"]["mean_ms"] >= 8
    assert document["details"]["failed_eras"] == {}


def test_a_server_of_2025_11_25_alone_is_measured_in_that_era_and_refused_the_other(
    legacy_server: SdkServer, tmp_path: Path
) -> None:
    out = tmp_path / "book_room.json"
    run = _measure(
        legacy_server.url, "--tool", "book_room", "--calls", "8", "--held-calls", "0",
        "--pid", str(legacy_server.process.pid), "--json", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    figures = json.loads(out.read_text())["tools"]["book_room"]
    assert set(figures) == {"2025-11-25"} and figures["2025-11-25"]["failed"] == 0
    run = _measure(legacy_server.url, "--tool", "book_room", "--era", "2026-07-28")
    assert run.returncode == 2
    assert "does not speak 2026-07-28; it speaks 2025-11-25" in run.stderr


@pytest.mark.parametrize("tool", ["book_room", "transfer", "summarize"])
def test_the_typescript_sdk_server_is_measured_tool_by_tool(
    ts_server: SdkServer, tool: str, tmp_path: Path
) -> None:
    out = tmp_path / f"{tool}.json"
    run = _measure(
        ts_server.url, "--tool", tool, "--pid", str(ts_server.process.pid), "--calls", "10",
        "--held-calls", "0", "--json", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    document = json.loads(out.read_text())
    modern = document["tools"][tool]["2026-07-28"]
    assert modern["failed"] == 0, document["details"]["eras"]
    assert modern["round_cpu"]["mean_ms"] > 0
    if tool == "book_room":
        # Its 2025-11-25 serving cannot ask (a request at a time, no stream to ask on):
        # that era's failure is said in the server's words, the other era's figures kept.
        assert "Cannot request input" in document["details"]["failed_eras"]["2025-11-25"]
    if tool == "summarize":
        assert set(document["tools"][tool]) == {"2026-07-28", "2025-11-25"}


def test_an_answer_the_server_rejects_is_named_with_the_servers_text(
    sdk_server: SdkServer, tmp_path: Path
) -> None:
    workload = tmp_path / "closed.toml"
    workload.write_text('[tools.book_room.answers.booking]\nemail = "team@closed.example"\n')
    run = _measure(
        sdk_server.url, "--tool", "book_room", "--era", "2026-07-28", "--workload",
        str(workload), "--calls", "3", "--held-calls", "0",
    )  # fmt: skip
    assert run.returncode == 2
    assert "answer rejected: tool returned isError" in run.stderr
    assert "bookings for closed.example are closed" in run.stderr


def test_bad_input_is_refused_in_one_line_before_anything_starts(
    sdk_server: SdkServer, tmp_path: Path
) -> None:
    workload = tmp_path / "wrong.toml"
    workload.write_text('[tools.transfer.arguments]\namount = "a lot"\n')
    for extra, said in (
        (["--tool", "refund"], "lists no tool 'refund'; it lists: book_room, summarize, transfer"),
        (["--tool", "transfer", "--workload", str(workload)], "tools.transfer.arguments.amount"),
    ):
        run = _measure(sdk_server.url, *extra, "--calls", "3")
        assert run.returncode == 2 and said in run.stderr, run.stderr[-1000:]
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr


@pytest.fixture
def web_page() -> Iterator[str]:
    """A plain web server (no MCP anywhere): it answers a POST with an HTML error page."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    server.shutdown()
    server.server_close()


def test_a_url_that_is_not_an_mcp_server_is_refused_in_one_line(web_page: str) -> None:
    with pytest.raises(TargetError, match=r"is not an MCP server: HTTP 501, text/html"):
        discover(web_page)
    run = _measure(web_page, "--tool", "anything", "--calls", "3")
    assert run.returncode == 2 and "is not an MCP server" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr

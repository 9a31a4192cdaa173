"""`python -m loadtest swarm --target URL` on a server nobody on the project wrote: the
official Python SDK's `MCPServer` with tools of the test's own (`tests/loadtest/sdk_server.py`,
its defaults, SSE on). The swarm calls the server's own tools in each era it speaks and
completes every call, no answer rejected; a tool whose answers the server rejects shows the
server's text in the summary, its table and Locust's failures; a tool the target does not
list, a workload file that does not fit, a URL that is not an MCP server are refused in one
line before anything starts."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.harness.process import free_port
from tests.loadtest.test_target import SdkServer
from tests.server.probes import wait_for

pytestmark = pytest.mark.integration

TOOLS = {"book_room", "transfer", "summarize"}
#: The server's own words when it rejects a booking (sdk_server.CLOSED_DOMAIN).
REJECTED = "bookings for closed.example are closed"


@pytest.fixture(scope="module")
def sdk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    server = SdkServer(tmp_path_factory.mktemp("sdk") / "server.log")
    try:
        server.wait_until_listening()
        yield server
    finally:
        server.stop()


def swarm(url: str, *extra: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A short headless swarm on `url` in this machine's one process (no worker)."""
    command = [
        sys.executable, "-m", "loadtest", "swarm", "--target", url, "--headless",
        "--workers", "0", "--master-port", str(free_port()), "--think-time-median-s", "0.05",
        *extra,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=cwd)


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_every_call_of_the_servers_own_tools_completes_in_each_era(
    sdk_server: SdkServer, tmp_path: Path, era: str
) -> None:
    out = tmp_path / "swarm.json"
    done = swarm(
        sdk_server.url, "--era", era, "--users", "3", "--duration", "4", "--json", str(out),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(out.read_text())
    per_tool = summary["per_tool"]
    assert summary["completed"] > 10 and summary["failed"] == summary["lost"] == 0, summary
    assert set(per_tool) == TOOLS
    assert (summary["target_server"], summary["target_eras"]) == ("rooms-and-money", [era])
    assert sum(t["completed"] for t in per_tool.values()) == summary["completed"]
    assert all(t["failures"] == {} and t["calls"] == t["completed"] for t in per_tool.values())
    assert per_tool["summarize"]["rounds_mean"] == 1  # asks nothing
    assert per_tool["book_room"]["rounds_mean"] == 2  # one form, then its result
    assert all(t["p95_ms"] is not None for t in per_tool.values())
    assert {c["arch"] for c in summary["calls"]} == {"mrtr" if era == "2026-07-28" else "legacy"}
    # The table printed at the end has a row per tool.
    assert all(any(line.startswith(name) for line in done.stdout.splitlines()) for name in TOOLS)


@pytest.fixture(scope="module")
def mixed_swarm(
    sdk_server: SdkServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One swarm in both eras on a weighted mix of three tools, whose bookings the server
    rejects (a closed domain in the workload): the run and its JSON summary's path, read by
    the tests of the mix and of the rejected answers alike."""
    tmp_path = tmp_path_factory.mktemp("mixed")
    workload = tmp_path / "closed.toml"
    workload.write_text('[tools.book_room.answers]\nemail = "ann@closed.example"\n')
    out = tmp_path / "swarm.json"
    done = swarm(
        sdk_server.url, "--tools", "summarize=1,transfer=1,book_room=1", "--workload",
        str(workload), "--users", "2", "--duration", "3", "--json", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done, out


def test_both_eras_share_the_users_and_a_weighted_mix(
    mixed_swarm: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    summary = json.loads(mixed_swarm[1].read_text())
    per_tool = summary["per_tool"]
    assert set(per_tool) == {"summarize", "transfer", "book_room"}
    assert {c["arch"] for c in summary["calls"]} == {"mrtr", "legacy"}
    assert summary["arch"] == "target" and summary["target_tools"] == {
        "summarize": 1,
        "transfer": 1,
        "book_room": 1,
    }
    # Only the bookings fail: the tools whose answers fit complete every call.
    assert summary["completed"] > 0 and summary["lost"] == 0
    assert summary["failed"] == per_tool["book_room"]["failed"]
    assert per_tool["summarize"]["failed"] == per_tool["transfer"]["failed"] == 0


def test_answers_the_server_rejects_are_said_in_its_words(
    mixed_swarm: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, out = mixed_swarm
    summary = json.loads(out.read_text())
    book = summary["per_tool"]["book_room"]
    assert book["completed"] == 0 and book["failed"] == book["calls"] > 0
    ((reason, count),) = book["failures"].items()
    assert reason.startswith("answer rejected: ") and REJECTED in reason and count == book["calls"]
    assert f"book_room: {count} x {reason}" in done.stdout
    # Locust's failures (its Failures tab, and the HTML report beside the summary) carry
    # the server's text too.
    assert REJECTED in out.with_suffix(".html").read_text()


def test_a_server_of_2025_11_25_alone_is_driven_in_that_era(tmp_path: Path) -> None:
    server = SdkServer(tmp_path / "server.log", "legacy-only")
    try:
        server.wait_until_listening()
        refused = swarm(server.url, "--era", "2026-07-28", cwd=tmp_path)
        out = tmp_path / "swarm.json"
        done = swarm(
            server.url, "--users", "2", "--duration", "3", "--json", str(out), cwd=tmp_path
        )
    finally:
        server.stop()
    assert "does not speak 2026-07-28; it speaks 2025-11-25" in _refused(refused)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert summary["completed"] > 0 and summary["failed"] == summary["lost"] == 0, summary
    assert {c["arch"] for c in summary["calls"]} == {"legacy"}
    assert sum(t["completed"] for t in summary["per_tool"].values()) == summary["completed"]


def _refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    return done.stderr


def test_a_tool_the_target_does_not_list_is_refused_naming_those_it_does(
    sdk_server: SdkServer, tmp_path: Path
) -> None:
    said = _refused(swarm(sdk_server.url, "--tools", "nope=1", "--workers", "1", cwd=tmp_path))
    assert "'nope'" in said and "book_room, summarize, transfer" in said
    assert not list(tmp_path.glob("*.json"))


def test_a_workload_that_does_not_fit_a_tools_schema_is_refused_naming_the_field(
    sdk_server: SdkServer, tmp_path: Path
) -> None:
    workload = tmp_path / "bad.toml"
    workload.write_text('[tools.transfer.arguments]\namount = "lots"\n')
    said = _refused(swarm(sdk_server.url, "--workload", str(workload), cwd=tmp_path))
    assert "tools.transfer.arguments.amount" in said


def test_a_url_that_is_not_an_mcp_server_is_refused(tmp_path: Path) -> None:
    page = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HtmlPage)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    try:
        said = _refused(swarm(f"http://127.0.0.1:{page.server_port}/mcp", cwd=tmp_path))
    finally:
        page.shutdown()
    assert "is not an MCP server" in said


class _HtmlPage(http.server.BaseHTTPRequestHandler):
    """A web page, not an MCP server."""

    def do_POST(self) -> None:
        body = b"<html><body>hello</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def ts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The official TypeScript SDK v2's server with the test's own tools
    (`tests/loadtest/ts_server.mjs`), on a port of its own; its URL."""
    from loadtest.bench.peers import typescript

    script = Path(__file__).with_name("ts_server.mjs")
    why = typescript.missing() or (None if script.exists() else f"{script.name} is missing")
    if why:
        pytest.skip(why)
    node = typescript.command(0, "plain")[0]
    port = free_port()
    log = (tmp_path_factory.mktemp("ts") / "server.log").open("w")
    env = {**os.environ, **typescript.environment()}
    process = subprocess.Popen([node, str(script), str(port)], stdout=log, stderr=log, env=env)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for(lambda: _listening(url), 30)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _listening(url: str) -> bool:
    try:
        httpx.get(url, timeout=1.0)
    except httpx.HTTPError:
        return False
    return True


def test_the_typescript_sdks_server_completes_every_call_in_2026_07_28(
    ts_server: str, tmp_path: Path
) -> None:
    out = tmp_path / "swarm.json"
    done = swarm(ts_server, "--users", "4", "--duration", "4", "--json", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert set(summary["per_tool"]) == TOOLS
    modern = [c for c in summary["calls"] if c["arch"] == "mrtr"]
    assert modern and all(c["outcome"] == "completed" for c in modern), summary["errors"]
    assert {c["tool"] for c in modern} == TOOLS
    # On 2025-11-25 it serves each request on its own and cannot ask: it says so itself.
    legacy = [c for c in summary["calls"] if c["arch"] == "legacy"]
    assert legacy and any(c["outcome"] == "completed" for c in legacy)
    for call in legacy:
        assert call["outcome"] == "completed" or "Cannot request input" in call["error"]


def test_the_web_ui_shows_each_tool_and_the_servers_words_in_its_failures(
    sdk_server: SdkServer, tmp_path: Path
) -> None:
    from tests.loadtest.test_swarm import web_swarm

    workload = tmp_path / "closed.toml"
    workload.write_text('[tools.book_room.answers]\nemail = "ann@closed.example"\n')
    flags = [
        "--target", sdk_server.url, "--tools", "book_room=1,summarize=1", "--workload",
        str(workload), "--users", "2", "--think-time-median-s", "0.05",
    ]  # fmt: skip
    seen: dict[str, Any] = {}

    def rejected_and_said() -> bool:
        stats = httpx.get(f"{url}/stats/requests", timeout=5).json()
        (rows,) = [t["data"] for t in stats["extended_stats"] if t["key"] == "lab-tools"]
        seen.update(tools={row["tool"]: row for row in rows}, errors=stats["errors"])
        book = seen["tools"].get("book_room", {})
        # Workers report Locust's statistics every few seconds; the calls' records at once.
        said = any(e["method"] == "CALL" for e in stats["errors"])
        return book.get("failed", 0) > 0 and "summarize" in seen["tools"] and said

    with web_swarm(tmp_path, flags) as url:
        wait_for(rejected_and_said, 60)
    book, summarize = seen["tools"]["book_room"], seen["tools"]["summarize"]
    assert book["completed"] == 0 and REJECTED in book["failures"]
    assert summarize["completed"] > 0 and summarize["failures"] == ""
    # Locust's Failures tab: the failed calls, grouped by the server's words.
    (failure,) = [e for e in seen["errors"] if e["method"] == "CALL"]
    assert failure["name"] == "book_room" and REJECTED in failure["error"]

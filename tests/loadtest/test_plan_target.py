"""Servers nobody on the project wrote, measured and planned: `measure` writes each of
their three tools' figures (the official Python and TypeScript SDKs' servers of
`test_target`), and `labsim plan` plans their mix under the servers' own tool names,
which verify-plan's reader reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loadtest.verify.plan_file import read_plan
from tests.loadtest.test_target import SdkServer, _measure, sdk_server, ts_server  # noqa: F401

pytestmark = pytest.mark.integration

TOOLS = ("book_room", "transfer", "summarize")
QUICK = ["--rate", "10", "--answer-timeout-s", "30", "--measure-s", "60", "--replications", "2",
         "--max-replications", "2"]  # fmt: skip


@pytest.mark.parametrize("server", ["sdk_server", "ts_server"])
def test_the_servers_mix_is_planned_under_its_own_names(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    target: SdkServer = request.getfixturevalue(server)
    merged: dict = {}
    for tool in TOOLS:
        out = tmp_path / f"{tool}.json"
        run = _measure(
            target.url, "--tool", tool, "--era", "both", "--pid", str(target.process.pid),
            "--calls", "6", "--held-calls", "0", "--json", str(out),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        document = json.loads(out.read_text())
        # One parameter file for the server: the first tool's, with every tool's figures.
        merged = merged or document
        merged["tools"] |= document["tools"]
    params, plan_path = tmp_path / "server.json", tmp_path / "plan.json"
    params.write_text(json.dumps(merged))
    assert set(merged["tools"]) == set(TOOLS)

    command = [sys.executable, "-m", "labsim", "plan", "--params", str(params),
               "--tool-mix", "book_room=3,transfer=1,summarize=1", *QUICK,
               "--json", str(plan_path)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    for tool in TOOLS:
        assert f"tool {tool}, 2026-07-28" in done.stdout
    assert "borrowed from the lab's own server" in done.stdout
    plan = json.loads(plan_path.read_text())
    assert plan["request"]["tools"] == list(TOOLS)
    assert plan["request"]["tool_mix"] == [0.6, 0.2, 0.2]
    simulated = {tool["name"]: tool for tool in plan["tools"]["mrtr"]}
    assert set(simulated) == set(TOOLS)
    # book_room asks one form, then answers; summarize answers at once.
    assert len(simulated["book_room"]["rounds_v1"]) == 1
    assert simulated["summarize"]["rounds_v1"] == []
    # summarize's 10 ms of CPU a call is its own work, well over book_room's.
    assert simulated["summarize"]["round_cpu"]["mean_s"] > 0.005
    assert (
        simulated["summarize"]["round_cpu"]["mean_s"]
        > simulated["book_room"]["round_cpu"]["mean_s"]
    )
    if server == "ts_server":
        # Its 2025-11-25 serving cannot ask: the legacy architectures take book_room's
        # 2026-07-28 figures, and the plan says so.
        assert "book_room: 2025-11-25 not measured; the legacy architectures take" in done.stdout
    read = read_plan(plan_path)
    assert read.request.tools == TOOLS
    assert [tool.name for tool in read.tools["mrtr"]] == list(TOOLS)

"""Each tool's calls in a swarm: the summary's `per_tool`, the table a swarm on a target
prints, and the Lab tools tab of the web UI."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from loadtest.scenarios.summary_table import print_tool_table
from loadtest.swarm.tool_table import per_tool, tool_rows

REJECTED = "answer rejected: tool returned isError: amount must be below 5000"


def _call(tool: str, outcome: str = "completed", **extra: Any) -> dict[str, Any]:
    return {"tool": tool, "outcome": outcome, "latency_ms": 10.0, "rounds": 2, **extra}


CALLS = [
    _call("transfer", latency_ms=10.0, rounds=3),
    _call("transfer", latency_ms=30.0, rounds=1),
    _call("transfer", "failed", error=REJECTED),
    _call("transfer", "failed", error=REJECTED),
    _call("transfer", "lost", error="no replica answered transfer"),
    _call("transfer", "abandoned", error="the user never answers code"),
    _call("summarize", rounds=1),
]


def test_per_tool_counts_each_tools_calls_and_says_why_they_failed() -> None:
    tools = per_tool(CALLS)
    transfer = tools["transfer"]
    assert (transfer["calls"], transfer["completed"], transfer["failed"]) == (6, 2, 2)
    assert (transfer["lost"], transfer["abandoned"]) == (1, 1)
    assert transfer["rounds_mean"] == 2  # completed calls only: (3 + 1) / 2
    assert transfer["p50_ms"] == 20.0 and transfer["p99_ms"] == pytest.approx(29.8)
    assert transfer["failures"] == {REJECTED: 2, "no replica answered transfer": 1}
    assert sum(t["completed"] for t in tools.values()) == 3
    assert tools["summarize"]["failures"] == {} and tools["summarize"]["rounds_mean"] == 1


def test_a_tool_without_a_completed_call_has_no_latency() -> None:
    (figures,) = per_tool([_call("book_room", "failed", error="HTTP 500")]).values()
    assert figures["rounds_mean"] is None and figures["p95_ms"] is None
    assert figures["failures"] == {"HTTP 500": 1}


def test_the_printed_table_has_a_row_per_tool_and_the_servers_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_tool_table(per_tool(CALLS))
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if line.startswith("transfer"))
    assert row.split()[:5] == ["transfer", "6", "2", "2", "1"]
    assert f"transfer: 2 x {REJECTED}" in lines


def test_the_lab_tools_tab_shows_each_tool_live() -> None:
    from flask import Flask

    from loadtest.labtab import tab
    from loadtest.labtab.control import TargetControl

    environment = SimpleNamespace(call_collector=SimpleNamespace(calls=CALLS), runner=None)
    web_ui = SimpleNamespace(app=Flask("lab"), template_args={}, environment=environment)
    tab.install(web_ui, TargetControl("http://127.0.0.1:9/mcp"), sample_every_s=None)

    @web_ui.app.get("/stats/requests")
    def stats() -> dict[str, Any]:
        return {"stats": [], "errors": []}

    document = web_ui.app.test_client().get("/stats/requests").get_json()
    (tools,) = [t["data"] for t in document["extended_stats"] if t["key"] == "lab-tools"]
    assert [row["tool"] for row in tools] == ["summarize", "transfer"]
    assert tools == tool_rows(CALLS)
    assert f"2 x {REJECTED}" in tools[1]["failures"]
    (table,) = [t for t in web_ui.template_args["extended_tables"] if t["key"] == "lab-tools"]
    assert {c["key"] for c in table["structure"]} >= {"tool", "completed", "p95_ms", "failures"}

"""A swarm's CI gate without a run: --fail-if expressions parsed, refused and judged on a
summary, and --compare's change of every headline figure between two summaries' JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loadtest.scenarios.headline_figures import RUN_FIGURES, TOOL_FIGURES, change_lines, changes
from loadtest.scenarios.thresholds import ThresholdError, crossed, parse_threshold

TOOLS = ["get_weather", "crunch"]


def summary(p95_ms: float | None, failed: int = 0, started: int = 100) -> dict[str, Any]:
    """A run's summary with the fields the headline figures read."""
    return {
        "started": started,
        "completed": started - failed,
        "failed": failed,
        "lost": 0,
        "abandoned": 0,
        "retries": 3,
        "throughput_per_s": 9.5,
        "latency_ms": {"p50": None if p95_ms is None else p95_ms / 2, "p95": p95_ms, "p99": p95_ms},
        "per_tool": {
            "crunch": {
                "calls": started, "completed": started - failed, "failed": failed, "lost": 0,
                "abandoned": 0, "p50_ms": 40.0, "p95_ms": 90.0, "p99_ms": 120.0,
            }
        },
    }  # fmt: skip


def test_a_threshold_over_its_limit_holds_and_says_its_value() -> None:
    gates = [parse_threshold(t, TOOLS) for t in ("p95_ms>500", "error_share>0.01")]
    assert crossed(gates, summary(650.0)) == ["p95_ms>500 holds (p95_ms = 650)"]
    assert crossed(gates, summary(650.0, failed=5)) == [
        "p95_ms>500 holds (p95_ms = 650)",
        "error_share>0.01 holds (error_share = 0.05)",
    ]


def test_a_threshold_within_its_limit_does_not_hold() -> None:
    gates = [parse_threshold(t, TOOLS) for t in ("p95_ms > 500", "error_share>=0.01")]
    assert crossed(gates, summary(120.0)) == []


def test_every_operator_and_a_tools_figure() -> None:
    run = summary(100.0)
    held = {
        text: bool(crossed([parse_threshold(text, TOOLS)], run))
        for text in ("crunch.p95_ms>=90", "crunch.p95_ms>90", "crunch.p95_ms<=90",
                     "crunch.p95_ms<91", "crunch.p95_ms==90", "crunch.p95_ms==89.5")
    }  # fmt: skip
    assert held == {
        "crunch.p95_ms>=90": True,
        "crunch.p95_ms>90": False,
        "crunch.p95_ms<=90": True,
        "crunch.p95_ms<91": True,
        "crunch.p95_ms==90": True,
        "crunch.p95_ms==89.5": False,
    }


def test_a_shape_of_rounds_is_a_tool_whose_figures_a_threshold_names() -> None:
    run = summary(100.0)
    run["per_tool"]["rounds/3x2"] = run["per_tool"].pop("crunch")
    gate = parse_threshold("rounds/3x2.p95_ms>=90", ["rounds/3x2"])
    assert crossed([gate], run) == ["rounds/3x2.p95_ms>=90 holds (rounds/3x2.p95_ms = 90)"]


def test_a_figure_the_run_has_no_value_of_holds() -> None:
    """No call completed, no latency: a latency gate cannot pass on nothing."""
    assert crossed([parse_threshold("p95_ms>500", TOOLS)], summary(None)) == [
        "p95_ms>500 holds (p95_ms = no value)"
    ]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("p95_ms>>500", "not FIGURE OP NUMBER"),
        ("p95_ms=500", "not FIGURE OP NUMBER"),
        ("p95_ms>fast", "not FIGURE OP NUMBER"),
        ("p95>500", "no such figure"),
        ("quote.p95_ms>500", "no tool 'quote'"),
        ("crunch.throughput_per_s>5", "no such figure of a tool"),
    ],
)
def test_a_malformed_or_unknown_expression_is_refused(text: str, says: str) -> None:
    with pytest.raises(ThresholdError, match=says):
        parse_threshold(text, TOOLS)


def test_compare_shows_the_change_of_every_headline_figure() -> None:
    rows = {r["figure"]: r for r in changes(summary(200.0), summary(300.0, failed=10))}
    assert set(RUN_FIGURES) | {f"crunch.{name}" for name in TOOL_FIGURES} == set(rows)
    assert rows["p95_ms"] == {
        "figure": "p95_ms", "before": 200.0, "now": 300.0, "change": 100.0, "percent": 50.0
    }  # fmt: skip
    assert rows["failed"]["change"] == 10 and rows["failed"]["percent"] is None
    assert rows["error_share"]["now"] == pytest.approx(0.1)
    lines = change_lines(summary(200.0), summary(300.0, failed=10))
    assert any(line.startswith("p95_ms") and "+100 (+50.0%)" in line for line in lines)


def test_a_fail_if_no_run_can_judge_is_refused_before_anything_starts(tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "loadtest", "swarm", "--headless", "--users", "1",
        "--duration", "1", "--fail-if", "p95_ms>500", "--fail-if", "latency>5",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--fail-if 'latency>5'" in result.stderr and "no such figure" in result.stderr
    assert "swarm against" not in result.stderr  # no cluster was started


def test_compare_refuses_a_file_that_is_not_a_runs_summary(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"ready": True}))
    command = [
        sys.executable, "-m", "loadtest", "swarm", "--headless", "--users", "1",
        "--duration", "1", "--compare", str(other),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "not a run's summary" in result.stderr

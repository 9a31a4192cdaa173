"""The swarm's users call the `rounds` tool in the shape a mix's name gives (`rounds/3x2`),
in both eras, answer every question it asks, and check that it took that shape."""

from __future__ import annotations

import random

import httpx
import pytest
from starlette.testclient import TestClient

from loadtest.users.flows import CallRecord, check_result, run_mrtr_flow
from loadtest.users.http_interface import HttpxLegacy, httpx_post
from loadtest.users.legacy_flow import SessionHolder, run_legacy_flow
from loadtest.users.simulated_user import ThinkTime, tool_arguments
from loadtest.users.tool_mix import ToolMixError, check_tool_mix
from loadtest.users.tool_shape import RoundsShape, ToolShapeError, called_tool, shape_of
from server.app import create_app
from server.tools.quote import QUOTE_MAX_CPU_MS
from server.tools.rounds import ROUNDS_MAX_ROUNDS
from tests.server.conftest import make_config
from tests.server.test_legacy_streams import live_replica


def test_a_shape_is_named_and_read_back() -> None:
    shape = RoundsShape(3, 2)
    assert shape.name == "rounds/3x2" and shape_of(shape.name) == shape
    assert shape.questions == 4
    assert called_tool("rounds/3x2") == "rounds" and called_tool("quote") == "quote"
    assert shape_of("quote") is None and shape_of("rounds/3") is None
    with pytest.raises(ToolShapeError, match=f"1 to {ROUNDS_MAX_ROUNDS} rounds"):
        shape_of(f"rounds/{ROUNDS_MAX_ROUNDS + 1}x1")


def test_a_mix_takes_shapes_of_rounds_within_its_caps() -> None:
    check_tool_mix({"rounds/3x1": 1.0, "rounds/2x2": 1.0, "get_weather": 1.0})
    with pytest.raises(ToolMixError, match="rounds/ROUNDSxQUESTIONS"):
        check_tool_mix({"rounds": 1.0})
    with pytest.raises(ToolMixError, match="questions a round"):
        check_tool_mix({"rounds/3x99": 1.0})
    with pytest.raises(ToolMixError, match="unknown tool 'rounds/x'"):
        check_tool_mix({"rounds/x": 1.0})


def test_a_shapes_arguments_carry_the_calls_cpu_within_the_cap() -> None:
    rng = random.Random(1)
    assert tool_arguments("rounds/3x2", rng, cpu_ms_per_round=4.5) == {
        "rounds": 3,
        "questions_per_round": 2,
        "cpu_ms_per_round": 4.5,
    }
    long_tail = tool_arguments("rounds/2x1", rng, cpu_ms_per_round=5 * QUOTE_MAX_CPU_MS)
    assert long_tail["cpu_ms_per_round"] == QUOTE_MAX_CPU_MS


def test_a_result_of_another_shape_fails_the_call() -> None:
    record = CallRecord(tool="rounds/3x2", arch="mrtr", started=0.0)
    check_result(record, {"structuredContent": {"rounds": 3, "questionsAnswered": 4}}, {})
    assert record.outcome == "completed"
    check_result(record, {"structuredContent": {"rounds": 2, "questionsAnswered": 2}}, {})
    assert record.outcome == "failed" and "took 2 rounds" in record.error


def test_an_mrtr_user_takes_every_round_of_the_shape() -> None:
    rng = random.Random(2)
    arguments = tool_arguments("rounds/4x2", rng, cpu_ms_per_round=0.5)
    with TestClient(create_app(make_config()), base_url="http://127.0.0.1") as http:
        record = run_mrtr_flow(
            httpx_post(http, "http://127.0.0.1/mcp"),
            "rounds/4x2",
            arguments,
            think=ThinkTime(0, 0, rng),
            rng=rng,
        )
    assert record.outcome == "completed", record.error
    assert record.tool == "rounds/4x2" and record.rounds == 4
    assert record.questions == [[f"round{k}_q1", f"round{k}_q2"] for k in (1, 2, 3)]


def test_a_legacy_user_answers_every_question_on_the_stream() -> None:
    rng = random.Random(3)
    arguments = tool_arguments("rounds/3x2", rng, cpu_ms_per_round=0.5)
    with live_replica() as base, httpx.Client(timeout=10) as client:
        record = run_legacy_flow(
            HttpxLegacy(client, f"{base}/mcp"),
            SessionHolder(),
            "rounds/3x2",
            arguments,
            arch="sticky",
            think=ThinkTime(0, 0, rng),
            rng=rng,
            sleep=lambda s: None,
        )
    assert record.outcome == "completed", record.error
    # One question at a time on the stream, each answered by a POST of its own.
    assert len(record.questions) == 4 and record.re_prompts == 0

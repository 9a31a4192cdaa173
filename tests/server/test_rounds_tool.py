"""The `rounds` tool takes the shape its arguments give, in both eras, within its caps.

A plan's tool is played live by `rounds` with the plan's rounds, questions and CPU per
round: each round but the last asks its questions together, every round spends its CPU
once however often MRTR runs the handler again, the 2025-11-25 era asks the same on the
call's stream, and counts are integers within caps (anything else is invalid params).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from server.app import create_app
from server.client import Handlers, LegacyClient, McpError, MrtrClient, accept, decline
from server.protocol.jsonrpc import INVALID_PARAMS
from server.tools import quote
from server.tools.quote import QUOTE_MAX_CPU_MS
from server.tools.rounds import ROUNDS_MAX_QUESTIONS, ROUNDS_MAX_ROUNDS
from tests.server.conftest import make_config
from tests.server.test_bad_input import call_body, headers
from tests.server.test_legacy_streams import live_replica
from tests.server.test_safe_defaults import DEFAULT

ANSWER = Handlers(elicit=lambda params: accept(answer="yes"))


def rounds_of(exchange: Any) -> list[dict[str, Any]]:
    return [r.response["result"] for r in exchange.rounds]


@pytest.fixture
def client() -> Iterator[MrtrClient]:
    with MrtrClient.for_app(create_app(make_config()), handlers=ANSWER, max_rounds=20) as c:
        yield c


def test_three_rounds_of_two_questions_ask_twice_and_answer_on_the_third(
    client: MrtrClient,
) -> None:
    done = client.call_tool("rounds", {"rounds": 3, "questions_per_round": 2})
    first, second, last = rounds_of(done)
    assert sorted(first["inputRequests"]) == ["round1_q1", "round1_q2"]
    assert sorted(second["inputRequests"]) == ["round2_q1", "round2_q2"]
    request = first["inputRequests"]["round1_q1"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["requestedSchema"]["required"] == ["answer"]
    # The third request answers only round 2's questions; round 1's ride in the state.
    assert sorted(done.rounds[2].request["params"]["inputResponses"]) == ["round2_q1", "round2_q2"]
    assert last["resultType"] == "complete" and last["isError"] is False
    assert last["structuredContent"] == {"rounds": 3, "questionsAnswered": 4, "cpuMsPerRound": 0}


def test_one_round_asks_nothing(client: MrtrClient) -> None:
    done = client.call_tool("rounds", {"rounds": 1})
    assert len(done.rounds) == 1
    assert done.result["structuredContent"]["questionsAnswered"] == 0


def test_the_most_rounds_and_questions_fit_the_servers_bounds(client: MrtrClient) -> None:
    arguments = {"rounds": ROUNDS_MAX_ROUNDS, "questions_per_round": ROUNDS_MAX_QUESTIONS}
    done = client.call_tool("rounds", arguments)
    assert len(done.rounds) == ROUNDS_MAX_ROUNDS
    assert done.result["structuredContent"]["questionsAnswered"] == (
        (ROUNDS_MAX_ROUNDS - 1) * ROUNDS_MAX_QUESTIONS
    )


def test_each_round_spends_its_cpu_once_however_often_the_handler_runs(
    client: MrtrClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    spent: list[float] = []
    monkeypatch.setattr(quote, "spend_cpu", spent.append)
    arguments = {"rounds": 4, "cpu_ms_per_round": 0.3}
    exchange = client.exchange("tools/call", {"name": "rounds", "arguments": arguments})
    for round_number in range(1, 4):
        assert client.send(exchange) is False
        assert spent == [0.3] * round_number  # the retry did not redo the earlier rounds
        exchange.answer({f"round{round_number}_q1": accept(answer="yes")})
    assert client.send(exchange) is True
    assert spent == [0.3] * 4
    assert exchange.result["structuredContent"]["cpuMsPerRound"] == 0.3


def test_a_declined_question_ends_the_call_as_an_error_result() -> None:
    app = create_app(make_config())
    with MrtrClient.for_app(app, handlers=Handlers(elicit=lambda p: decline())) as client:
        done = client.call_tool("rounds", {"rounds": 3})
    assert done.result["isError"] is True and "round 1 of 3" in done.text
    assert len(done.rounds) == 2


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"rounds": 3.0}, "arguments.rounds: 3.0 is not an integer"),
        ({"rounds": 2, "questions_per_round": 2.0}, "arguments.questions_per_round: 2.0"),
        ({"rounds": 2, "questions_per_round": 1.5}, "arguments.questions_per_round"),
        ({"rounds": ROUNDS_MAX_ROUNDS + 1}, f"maximum of {ROUNDS_MAX_ROUNDS}"),
        ({"rounds": 2, "questions_per_round": ROUNDS_MAX_QUESTIONS + 1}, "maximum of"),
        ({"rounds": 2, "cpu_ms_per_round": QUOTE_MAX_CPU_MS + 1}, f"maximum of {QUOTE_MAX_CPU_MS}"),
        ({"rounds": 0}, "minimum of 1"),
        ({"rounds": 2, "cpu_ms_per_round": -1}, "minimum of 0"),
        ({"rounds": "3"}, "arguments.rounds"),
        ({}, "rounds"),
    ],
)
def test_a_shape_outside_the_caps_or_not_a_count_is_invalid_params(
    client: MrtrClient, arguments: dict[str, Any], words: str
) -> None:
    with pytest.raises(McpError) as refused:
        client.call_tool("rounds", arguments)
    assert refused.value.code == INVALID_PARAMS
    assert words in refused.value.message


FUZZ_CLIENT = TestClient(
    create_app(make_config()), base_url="http://127.0.0.1", raise_server_exceptions=False
)
json_values = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=json_values, questions=json_values, cpu_ms=json_values)
def test_any_arguments_are_served_or_invalid_params_never_a_5xx(
    rounds: Any, questions: Any, cpu_ms: Any
) -> None:
    # A round's CPU beyond a few milliseconds is time, not a different answer.
    assume(not (isinstance(cpu_ms, int | float) and 2 < cpu_ms <= QUOTE_MAX_CPU_MS))
    arguments = {"rounds": rounds, "questions_per_round": questions, "cpu_ms_per_round": cpu_ms}
    raw = json.dumps(call_body("rounds", arguments)).encode()
    response = FUZZ_CLIENT.post("/mcp", content=raw, headers=headers("tools/call", "rounds"))
    assert response.status_code < 500, response.text
    body = response.json()
    if "error" in body:
        assert body["error"]["code"] == INVALID_PARAMS or response.status_code == 400
    else:
        assert body["result"]["resultType"] in ("input_required", "complete")


def test_rounds_asks_the_same_on_the_2025_11_25_stream() -> None:
    with (
        live_replica() as base,
        LegacyClient(f"{base}/mcp", handlers=ANSWER) as client,
    ):
        done = client.call_tool("rounds", {"rounds": 3, "questions_per_round": 2})
        single = client.call_tool("rounds", {"rounds": 1, "cpu_ms_per_round": 1})
    messages = [r["params"]["message"] for r in done.server_requests]
    assert sorted(messages) == [
        "Round 1 of 3: question 1 of 2",
        "Round 1 of 3: question 2 of 2",
        "Round 2 of 3: question 1 of 2",
        "Round 2 of 3: question 2 of 2",
    ]
    assert done.result["structuredContent"] == {
        "rounds": 3,
        "questionsAnswered": 4,
        "cpuMsPerRound": 0,
    }
    assert not single.server_requests and single.result["structuredContent"]["rounds"] == 1


@pytest.mark.integration
def test_a_round_of_ten_milliseconds_runs_in_the_workers() -> None:
    app = create_app(make_config(cpu_inline_max_ms=DEFAULT["cpu_inline_max_ms"]))
    try:
        with MrtrClient.for_app(app, handlers=ANSWER) as client:
            done = client.call_tool("rounds", {"rounds": 2, "cpu_ms_per_round": 10})
            assert done.result["structuredContent"]["cpuMsPerRound"] == 10
            assert app.state.server.cpu.started
    finally:
        app.state.server.cpu.close()

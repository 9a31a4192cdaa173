"""The simulated tools ask what the server's demo tools ask, round by round.

labsim does not import the server; this test imports both, runs each demo tool
on an in-process server of each tool version, and compares the questions of
every `input_required` round with `labsim.model.tools`.
"""

from __future__ import annotations

from typing import Any

import pytest

from labsim.model.tools import CATALOGUE, TOOLS, rounds_tool
from loadtest.users.tool_shape import RoundsShape
from server.app import create_app
from server.client import MrtrClient
from tests.server.conftest import make_config, user_answers

# Arguments that take each tool down its longest path.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "get_weather": {"location": "Oslo"},
    "update_work_item": {"workItemId": 7, "fields": {"System.State": "Resolved"}},
    "link_accounts": {},
    "ask_capital": {"country": "France"},
    "crunch": {"units": 2500},
    "echo": {},
    "quote": {"cpu_ms": 1},
}
# Server tools the simulation models elsewhere: provision_vm becomes a task; rounds takes
# its shape from its arguments (`rounds_tool`).
MODELLED_ELSEWHERE = {"provision_vm", "rounds"}


def _rounds(
    version: int, name: str, shed_every_units: int = 0, arguments: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    config = make_config(tool_version=version, shed_every_units=shed_every_units)
    handlers = user_answers(
        resolution={"resolution": "Duplicate"},
        dup={"duplicateOfId": 4},
        echo={"input": "hi"},
        round_answer={"answer": "yes"},
    )
    with MrtrClient.for_app(create_app(config), handlers=handlers, max_rounds=20) as client:
        done = client.call_tool(name, ARGUMENTS[name] if arguments is None else arguments)
    assert done.result["resultType"] == "complete"
    assert done.result.get("isError") is not True, done.result
    return [r.response["result"] for r in done.rounds]


def test_every_server_tool_is_simulated() -> None:
    with MrtrClient.for_app(create_app(make_config()), handlers=user_answers()) as client:
        served = {tool["name"] for tool in client.list_tools()}
    assert served - MODELLED_ELSEWHERE == set(TOOLS)


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", [tool.name for tool in CATALOGUE])
def test_each_round_asks_the_same_questions(name: str, version: int) -> None:
    results = _rounds(version, name)
    asked = [
        tuple(sorted(result["inputRequests"]))
        for result in results
        if result["resultType"] == "input_required"
    ]
    assert asked == [tuple(sorted(r)) for r in TOOLS[name].rounds(version)]
    assert len(results) == TOOLS[name].requests(version)


@pytest.mark.parametrize("name", [tool.name for tool in CATALOGUE])
def test_only_the_tools_that_checkpoint_hand_their_work_on(name: str) -> None:
    results = _rounds(1, name, shed_every_units=1000)
    state_only = [
        r for r in results if r["resultType"] == "input_required" and not r.get("inputRequests")
    ]
    assert bool(state_only) == TOOLS[name].offloads


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(("rounds", "questions_per_round"), [(1, 1), (3, 1), (3, 2), (16, 8)])
def test_the_rounds_tool_asks_as_its_arguments_say(
    rounds: int, questions_per_round: int, version: int
) -> None:
    arguments = {"rounds": rounds, "questions_per_round": questions_per_round}
    results = _rounds(version, "rounds", arguments=arguments)
    asked = [
        tuple(sorted(result["inputRequests"]))
        for result in results
        if result["resultType"] == "input_required"
    ]
    model = rounds_tool(rounds, questions_per_round)
    assert asked == [tuple(sorted(r)) for r in model.rounds(version)]
    assert len(results) == model.requests(version) == rounds
    assert model.questions(version) == (rounds - 1) * questions_per_round


def test_a_shape_of_the_rounds_tool_is_known_by_its_mix_name() -> None:
    """`rounds/3x2`, as a load test's mix names it, is the rounds tool of that shape under
    that name; a shape without rounds or questions is not a tool, and listing the tools
    names the demo tools only."""
    shaped = TOOLS["rounds/3x2"]
    assert shaped.name == "rounds/3x2" and "rounds/3x2" in TOOLS
    assert shaped.rounds(1) == rounds_tool(3, 2).rounds(1)
    assert (shaped.requests(1), shaped.questions(1)) == (3, 4)
    for name in ("rounds/0x1", "rounds/3x0", "rounds/03x1", "rounds/3", "rounds"):
        assert name not in TOOLS and TOOLS.get(name) is None
    # The load test names its shapes as labsim reads them.
    assert RoundsShape(16, 8).name in TOOLS and TOOLS[RoundsShape(3, 2).name] == shaped
    assert list(TOOLS) == [tool.name for tool in CATALOGUE]

"""The bench's floor: the lab's answers to every round, with only the state's work done."""

from __future__ import annotations

import warnings

import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp

from loadtest.bench.rounds import rounds_for
from server.app import create_app
from server.config import ServerConfig
from server.mrtr.state import StateError

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the development key, as the bench runs it
    from loadtest.bench.peers.floor import app as floor_app


def _answers(app: ASGIApp) -> dict[str, dict]:
    """Each round kind's result from `app`, walked through the conversation first."""
    client = TestClient(app, base_url="http://127.0.0.1")
    rounds = rounds_for("/mcp", http=client)
    replies = {k: client.post("/mcp", json=r.body, headers=r.headers) for k, r in rounds.items()}
    return {k: reply.json()["result"] for k, reply in replies.items()}


@pytest.mark.slow
def test_the_floor_answers_each_round_as_the_lab_does() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab = create_app(ServerConfig(shed_every_units=1))
    floor, labs = _answers(floor_app), _answers(lab)
    for kind, result in labs.items():
        assert floor[kind]["resultType"] == result["resultType"], kind
        assert floor[kind].get("inputRequests") == result.get("inputRequests"), kind
        assert ("requestState" in floor[kind]) == ("requestState" in result), kind
    # The same question, a state sealed the same way: the answer is the lab's size.
    floor_seal, lab_seal = floor["seal"], labs["seal"]
    assert abs(len(floor_seal["requestState"]) - len(lab_seal["requestState"])) <= 8


def test_the_floor_opens_a_state_only_for_its_own_request() -> None:
    client = TestClient(floor_app, base_url="http://127.0.0.1")
    rounds = rounds_for("/mcp", http=client)
    other = rounds["open"].body | {"id": 9}
    other["params"] = other["params"] | {"arguments": {"workItemId": 1, "fields": {}}}
    with pytest.raises(StateError) as refused:
        client.post("/mcp", json=other, headers=rounds["open"].headers)
    assert refused.value.reason == "wrong_request"

"""requestState lifetime on the wire: a late retry is asked again, an attack is still an error.

A user may answer long after the question (the state's TTL has passed), or after a
rolling upgrade retired the key that sealed it. Neither strands them: the server answers
`input_required` from the first question and counts it. A tampered state, another
principal's and another request's stay JSON-RPC errors (see also test_state.py).
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from server.client import Handlers, McpError, MrtrClient, accept
from server.mrtr.state import Origin, StateError, StateSealer, arguments_digest
from server.protocol.jsonrpc import INVALID_PARAMS
from tests.server.conftest import KEY_A, KEY_B

#: A client that declares elicitation (the answers themselves are set round by round).
USER = Handlers(elicit=lambda params: accept())
WORK_ITEM = {"workItemId": 7, "fields": {"System.State": "Resolved"}}


def state_after_two_rounds(url: str) -> str:
    """update_work_item's state after the resolution was answered (round 2 sealed it)."""
    with MrtrClient(url, handlers=USER) as client:
        exchange = client.exchange(
            "tools/call", {"name": "update_work_item", "arguments": WORK_ITEM}
        )
        assert not client.send(exchange)
        exchange.answer({"resolution": accept(resolution="Duplicate")})
        assert not client.send(exchange)
        assert set(exchange.input_requests) == {"duplicate_of"}
        return exchange.request_state


def retry(url: str, state: str, arguments: dict[str, Any] = WORK_ITEM) -> Any:
    """The third round, answering duplicate_of with `state`: the exchange after it."""
    with MrtrClient(url, handlers=USER) as client:
        exchange = client.exchange(
            "tools/call", {"name": "update_work_item", "arguments": arguments}
        )
        exchange.request_state = state
        exchange.input_requests = {"duplicate_of": {}}
        exchange.answer({"duplicate_of": accept(duplicateOfId=4301)})
        done = client.send(exchange)
        return done, exchange


def restarts(base_url: str) -> dict[str, float]:
    text = httpx.get(f"{base_url}/metrics", timeout=5).text
    found = re.findall(r'mrtr_request_state_restarts_total\{reason="(\w+)"\} ([\d.]+)', text)
    return {reason: float(value) for reason, value in found}


def asked_from_the_start(done: bool, exchange: Any) -> None:
    assert done is False
    result = exchange.rounds[-1].response["result"]
    assert result["resultType"] == "input_required"
    # The first question again: the resolution, not the duplicate it led to.
    assert set(result["inputRequests"]) == {"resolution"}
    assert "requestState" not in result  # nothing learnt yet, nothing to carry


@pytest.mark.integration
def test_an_expired_state_is_asked_again_from_the_first_question(replicas: Any) -> None:
    replica = replicas("--state-ttl-s", "1")
    state = state_after_two_rounds(replica.url)
    time.sleep(2.1)  # past the TTL (expiry is in whole seconds)
    done, exchange = retry(replica.url, state)
    asked_from_the_start(done, exchange)
    assert restarts(replica.base_url) == {"expired": 1.0}
    # Answered again, the call completes as it would have.
    with MrtrClient(replica.url, handlers=USER) as client:
        exchange.answer({"resolution": accept(resolution="Duplicate")})
        assert not client.send(exchange)
        exchange.answer({"duplicate_of": accept(duplicateOfId=4301)})
        assert client.send(exchange)
    assert exchange.text == "Bug #7 resolved as Duplicate of Bug #4301"


@pytest.mark.integration
def test_a_state_sealed_with_a_retired_key_is_asked_again(replicas: Any) -> None:
    before = replicas(keys=(KEY_A,))
    after = replicas(keys=(KEY_B,))  # the rotation is over: key a is retired
    state = state_after_two_rounds(before.url)
    done, exchange = retry(after.url, state)
    asked_from_the_start(done, exchange)
    assert restarts(after.base_url) == {"unknown_key": 1.0}


@pytest.mark.integration
def test_an_expired_state_of_another_request_is_still_an_error(replicas: Any) -> None:
    replica = replicas("--state-ttl-s", "1")
    state = state_after_two_rounds(replica.url)
    time.sleep(2.1)
    other = {"workItemId": 8, "fields": {"System.State": "Resolved"}}
    with pytest.raises(McpError) as caught:
        retry(replica.url, state, other)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data == {"reason": "wrong_request"}
    assert restarts(replica.base_url) == {}


@pytest.mark.integration
def test_a_tampered_state_is_still_an_error(replicas: Any) -> None:
    replica = replicas()
    state = state_after_two_rounds(replica.url)
    kid, body = state.split(".")
    flipped = body[:10] + ("A" if body[10] != "A" else "B") + body[11:]
    with pytest.raises(McpError) as caught:
        retry(replica.url, f"{kid}.{flipped}")
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message == "Invalid requestState"
    assert restarts(replica.base_url) == {}


def test_request_binding_is_checked_before_expiry() -> None:
    now = [1_000_000.0]
    sealer = StateSealer([KEY_A], ttl_s=60, clock=lambda: now[0])
    origin = Origin("alice", "tools/call", "get_weather", arguments_digest({"location": "Paris"}))
    token = sealer.seal(origin, round=1, answers={}, tool_state={})
    now[0] += 61
    other = origin._replace(arguments_digest=arguments_digest({"location": "Rome"}))
    with pytest.raises(StateError) as caught:
        sealer.open(token, other)
    assert caught.value.reason == "wrong_request"
    with pytest.raises(StateError) as caught:
        sealer.open(token, origin._replace(principal="bob"))
    assert caught.value.reason == "wrong_principal"

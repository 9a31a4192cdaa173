"""Every demo tool's whole flow, round by round, as the seed describes it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from server.app import create_app
from server.client import Handlers, MrtrClient, accept, decline
from server.tools import quote
from server.tools.crunch import crunch_start, crunch_units
from server.tools.quote import spend_cpu
from tests.server.conftest import make_config, user_answers


def rounds_of(exchange: Any) -> list[dict[str, Any]]:
    return [r.response["result"] for r in exchange.rounds]


def test_get_weather_asks_github_login_then_completes(client: MrtrClient) -> None:
    done = client.call_tool("get_weather", {"location": "New York"})
    first, last = rounds_of(done)
    assert first["resultType"] == "input_required"
    request = first["inputRequests"]["github_login"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "form"
    assert request["params"]["requestedSchema"]["required"] == ["name"]
    assert "requestState" not in first  # nothing learnt yet, nothing to carry
    assert last["resultType"] == "complete" and last["isError"] is False
    assert "New York" in done.text and "octocat" in done.text


def test_get_weather_declined_is_an_error_result(app: Any) -> None:
    with MrtrClient.for_app(app, handlers=Handlers(elicit=lambda p: decline())) as client:
        done = client.call_tool("get_weather", {"location": "Oslo"})
    assert done.result["isError"] is True
    assert done.result["resultType"] == "complete"


def test_update_work_item_carries_the_resolution_in_request_state(app: Any) -> None:
    handlers = user_answers(resolution={"resolution": "Duplicate"}, dup={"duplicateOfId": 4301})
    with MrtrClient.for_app(app, handlers=handlers) as client:
        done = client.call_tool(
            "update_work_item", {"workItemId": 4522, "fields": {"System.State": "Resolved"}}
        )
    first, second, last = rounds_of(done)
    assert list(first["inputRequests"]) == ["resolution"]
    assert "requestState" not in first
    assert list(second["inputRequests"]) == ["duplicate_of"]
    assert second["requestState"]  # the resolution rides along, sealed
    # The third request answers only duplicate_of; the resolution came back in the state.
    third_request = done.rounds[2].request["params"]
    assert list(third_request["inputResponses"]) == ["duplicate_of"]
    assert third_request["requestState"] == second["requestState"]
    assert done.text == "Bug #4522 resolved as Duplicate of Bug #4301"
    assert last["isError"] is False


def test_update_work_item_fixed_takes_one_round(app: Any) -> None:
    handlers = user_answers(resolution={"resolution": "Fixed"})
    with MrtrClient.for_app(app, handlers=handlers) as client:
        done = client.call_tool(
            "update_work_item", {"workItemId": 7, "fields": {"System.State": "Resolved"}}
        )
    assert len(done.rounds) == 2
    assert done.text == "Bug #7 resolved as Fixed"


def test_link_accounts_version_1_asks_github_and_google_in_one_round(client: MrtrClient) -> None:
    done = client.call_tool("link_accounts")
    assert sorted(rounds_of(done)[0]["inputRequests"]) == ["github_login", "google_login"]
    assert done.result["structuredContent"]["linked"] == {"github": "octocat", "google": "octocat"}


def test_link_accounts_retry_on_version_2_asks_only_microsoft_login() -> None:
    """The seed's rolling upgrade: round 1 on v1, the retry on v2, nothing the user said lost."""
    old = MrtrClient.for_app(create_app(make_config(tool_version=1)), handlers=user_answers())
    new = MrtrClient.for_app(create_app(make_config(tool_version=2)), handlers=user_answers())
    with old, new:
        exchange = old.exchange("tools/call", {"name": "link_accounts", "arguments": {}})
        assert not old.send(exchange)
        assert sorted(exchange.input_requests) == ["github_login", "google_login"]
        exchange.answer({"github_login": accept(name="octo"), "google_login": accept(name="g")})
        assert not new.send(exchange)  # the retry lands on an upgraded replica
        assert list(exchange.input_requests) == ["microsoft_login"]
        assert exchange.request_state  # github_login is carried, sealed
        exchange.answer({"microsoft_login": accept(name="ms")})
        assert new.send(exchange)
    assert exchange.result["structuredContent"]["linked"] == {"github": "octo", "microsoft": "ms"}


def test_ask_capital_asks_login_and_llm_in_one_round(client: MrtrClient) -> None:
    done = client.call_tool("ask_capital", {"country": "France"})
    requests = rounds_of(done)[0]["inputRequests"]
    assert requests["github_login"]["method"] == "elicitation/create"
    assert requests["capital"]["method"] == "sampling/createMessage"
    text = requests["capital"]["params"]["messages"][0]["content"]["text"]
    assert text == "What is the capital of France?"
    assert "Paris" in done.text


def test_quote_spends_its_cpu_once_in_each_round(
    client: MrtrClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    spent: list[float] = []
    monkeypatch.setattr(quote, "spend_cpu", spent.append)
    exchange = client.exchange("tools/call", {"name": "quote", "arguments": {"cpu_ms": 0.2}})
    assert client.send(exchange) is False  # asks github_login
    assert spent == [0.2]
    exchange.answer({"github_login": accept(name="octocat")})
    assert client.send(exchange) is True
    assert spent == [0.2, 0.2]  # the retry does not redo the first round's work
    assert "octocat" in exchange.text


def test_spend_cpu_uses_at_least_that_much_cpu_time() -> None:
    started = time.process_time()
    spend_cpu(20)
    assert time.process_time() - started >= 0.020


def test_crunch_without_shedding_completes_in_one_round(client: MrtrClient) -> None:
    done = client.call_tool("crunch", {"units": 2500})
    assert len(done.rounds) == 1
    structured = done.result["structuredContent"]
    assert structured["digest"] == crunch_units(crunch_start(), 0, 2500)
    assert structured["replicas"] == ["replica-1"]


def test_crunch_sheds_with_state_only_and_keeps_the_digest() -> None:
    app = create_app(make_config(shed_every_units=1000))
    with MrtrClient.for_app(app, backoff_s=0) as client:
        done = client.call_tool("crunch", {"units": 2500})
    shed = rounds_of(done)[:-1]
    assert len(shed) == 2
    for result in shed:
        assert result["resultType"] == "input_required"
        assert "inputRequests" not in result and result["requestState"]
    assert done.result["structuredContent"]["digest"] == crunch_units(crunch_start(), 0, 2500)


def test_greeting_prompt_asks_the_name(client: MrtrClient) -> None:
    done = client.get_prompt("greeting")
    assert rounds_of(done)[0]["inputRequests"]["user_name"]["method"] == "elicitation/create"
    assert "octocat" in done.result["messages"][0]["content"]["text"]


def test_vault_resource_is_read_only_after_confirmation(app: Any) -> None:
    with MrtrClient.for_app(app, handlers=Handlers(elicit=lambda p: accept(confirm=True))) as c:
        done = c.read_resource("vault://secret")
    assert done.result["contents"][0]["text"].startswith("Secret for anonymous:")
    assert done.result["cacheScope"] == "private"


@pytest.mark.integration
def test_crunch_moves_between_two_replicas_with_the_same_digest(replicas: Any) -> None:
    """The seed's load shedding on real processes: A sheds, B resumes, A finishes."""
    a = replicas("--shed-every-units", "1000", replica_id="a")
    b = replicas("--shed-every-units", "1000", replica_id="b")
    whole = replicas(replica_id="whole")
    arguments = {"units": 2500}
    with MrtrClient(a.url) as on_a, MrtrClient(b.url) as on_b, MrtrClient(whole.url) as unshed:
        exchange = on_a.exchange("tools/call", {"name": "crunch", "arguments": arguments})
        for client in (on_a, on_b, on_a):  # a round-robin balancer, by hand
            done = client.send(exchange)
        reference = unshed.call_tool("crunch", arguments)
    assert done
    moved = exchange.result["structuredContent"]
    assert moved["replicas"] == ["a", "b", "a"]
    assert moved["digest"] == reference.result["structuredContent"]["digest"]
    assert reference.result["structuredContent"]["replicas"] == ["whole"]


def test_an_answer_the_new_version_dropped_survives_a_retry_on_the_old_version() -> None:
    """Mid-upgrade the rounds may go v1, v2, v1: google_login must not be asked twice."""
    old = MrtrClient.for_app(create_app(make_config(tool_version=1)), handlers=user_answers())
    new = MrtrClient.for_app(create_app(make_config(tool_version=2)), handlers=user_answers())
    with old, new:
        exchange = old.exchange("tools/call", {"name": "link_accounts", "arguments": {}})
        assert not old.send(exchange)
        exchange.answer({"github_login": accept(name="octo"), "google_login": accept(name="g")})
        assert not new.send(exchange)
        assert list(exchange.input_requests) == ["microsoft_login"]
        exchange.answer({"microsoft_login": accept(name="ms")})
        assert old.send(exchange)  # back on version 1: it finds google_login in the state
    assert exchange.result["structuredContent"]["linked"] == {"github": "octo", "google": "g"}

"""Legacy tool calls held on SSE streams: asking, answering, timing out, freeing memory.

These need a real HTTP server (an in-process test client buffers the whole response, so it
could never answer a question asked mid-stream): each test runs one replica under uvicorn
in a thread of the test process, on a free port.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from mcp import Client, types

from loadtest.probes.held_memory import measure_held_calls
from server.app import create_app
from server.client import (
    AsyncLegacyClient,
    Handlers,
    LegacyClient,
    LegacyExchange,
    McpError,
    accept,
)
from server.harness.process import ServerProcess, free_port, wait_until_healthy
from tests.server.conftest import make_config, user_answers
from tests.server.probes import health, holds_nothing, metric, wait_for


@contextmanager
def live_replica(**config: Any) -> Iterator[str]:
    """One replica served by uvicorn in a thread; yields its base URL."""
    app = create_app(make_config(**config))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=1,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}/healthz", 10.0)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10.0)


@pytest.fixture(scope="module")
def replica() -> Iterator[str]:
    with live_replica() as base:
        yield base


def test_get_weather_asks_on_the_stream_and_completes(replica: str) -> None:
    with LegacyClient(f"{replica}/mcp", handlers=user_answers()) as client:
        done = client.call_tool("get_weather", {"location": "New York"})
    (asked,) = done.server_requests
    assert asked["method"] == "elicitation/create"
    assert isinstance(asked["id"], str)  # the server's own id, unique across replicas
    assert asked["params"]["requestedSchema"]["required"] == ["name"]
    call, answer = done.rounds
    assert call.http_status == 200 and answer.http_status == 202
    assert answer.request["id"] == asked["id"]
    assert answer.request["result"] == {"action": "accept", "content": {"name": "octocat"}}
    assert done.text.startswith("Weather in New York for octocat:")
    assert "resultType" not in done.result


def test_every_demo_tool_runs_the_same_handler_under_legacy(replica: str) -> None:
    handlers = user_answers(resolution={"resolution": "Duplicate"}, dup={"duplicateOfId": 4301})
    with LegacyClient(f"{replica}/mcp", handlers=handlers) as client:
        linked = client.call_tool("link_accounts")
        work = client.call_tool(
            "update_work_item", {"workItemId": 4522, "fields": {"System.State": "Resolved"}}
        )
        capital = client.call_tool("ask_capital", {"country": "France"})
        greeting = client.get_prompt("greeting")
    # Two questions in one round: both requests arrive before either is answered.
    assert sorted(r["params"]["message"] for r in linked.server_requests) == [
        "Please provide your GitHub username",
        "Please provide your Google username",
    ]
    assert linked.result["structuredContent"]["linked"] == {
        "github": "octocat",
        "google": "octocat",
    }
    assert work.text == "Bug #4522 resolved as Duplicate of Bug #4301"
    assert [r["method"] for r in capital.server_requests] == [
        "elicitation/create",
        "sampling/createMessage",
    ]
    assert "Paris" in capital.text
    assert "octocat" in greeting.result["messages"][0]["content"]["text"]


def test_an_answer_that_does_not_fit_is_asked_again_saying_why(replica: str) -> None:
    answers = iter([accept(login="no name field"), accept(name="second-try")])
    handlers = Handlers(elicit=lambda params: next(answers))
    with LegacyClient(f"{replica}/mcp", handlers=handlers) as client:
        done = client.call_tool("get_weather", {"location": "Oslo"})
    first, second = done.server_requests
    assert first["id"] != second["id"]
    why = '\n\nYour last answer was not accepted: "name" is a required property'
    assert second["params"] == {**first["params"], "message": first["params"]["message"] + why}
    assert "second-try" in done.text


def test_roots_are_asked_on_the_stream_too() -> None:
    with (
        live_replica(conformance=True) as base,
        LegacyClient(f"{base}/mcp", handlers=user_answers()) as client,
    ):
        done = client.call_tool("test_input_required_result_list_roots")
    assert [r["method"] for r in done.server_requests] == ["roots/list"]
    assert done.text == "Roots: file:///work"


def test_the_async_client_completes_get_weather(replica: str) -> None:
    async def run() -> str:
        async with AsyncLegacyClient(f"{replica}/mcp", handlers=user_answers()) as client:
            return (await client.call_tool("get_weather", {"location": "Lisbon"})).text

    assert asyncio.run(run()).startswith("Weather in Lisbon for octocat:")


def test_the_official_mcp_client_completes_get_weather_in_legacy_mode(replica: str) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "sdk-user"})

    async def run() -> types.CallToolResult:
        async with Client(f"{replica}/mcp", mode="legacy", elicitation_callback=elicit) as client:
            assert client.protocol_version == "2025-11-25"
            return await client.call_tool("get_weather", {"location": "Lisbon"})

    result = asyncio.run(run())
    assert asked == ["Please provide your GitHub username"]
    assert result.is_error is False
    assert result.content[0].text.startswith("Weather in Lisbon for sdk-user:")


def open_held_call(
    client: LegacyClient, http: httpx.Client, arguments: dict[str, Any]
) -> tuple[LegacyExchange, Any]:
    """Send get_weather and read its stream up to the question; the stream stays open."""
    exchange = client.exchange("tools/call", {"name": "get_weather", "arguments": arguments})
    headers, body = exchange.next_request()
    stream = http.stream("POST", client.url, json=body, headers=headers)
    response = stream.__enter__()
    lines = response.iter_lines()
    while not exchange.server_requests:
        exchange.feed_line(next(lines))
    return exchange, (stream, lines)


def test_an_unanswered_call_times_out_ends_its_stream_and_frees_its_memory() -> None:
    with live_replica(answer_timeout_s=0.5) as base, httpx.Client(timeout=10) as http:
        client = LegacyClient(f"{base}/mcp", http=http, handlers=user_answers())
        client.initialize()
        exchange, (stream, lines) = open_held_call(client, http, {"location": "Oslo"})
        try:
            waiting = health(base)
            assert waiting["open_streams"] == 1 and waiting["waiting_calls"] == 1
            assert waiting["waiting_memory_bytes"] > 1000
            assert metric(base, "legacy_waiting_memory_bytes") == waiting["waiting_memory_bytes"]
            for line in lines:  # nobody answers
                exchange.feed_line(line)
        except McpError as exc:
            assert exc.code == -32001 and "no answer within 0.5 s" in exc.message
        else:
            pytest.fail("the stream ended without the timeout error")
        finally:
            stream.__exit__(None, None, None)
        (asked,) = exchange.server_requests
        cancelled = [m for m in exchange.events if m.get("method") == "notifications/cancelled"]
        assert cancelled[0]["params"]["requestId"] == asked["id"]
        wait_for(lambda: holds_nothing(base))
        assert health(base)["in_flight"] == 0
        assert metric(base, "legacy_answer_timeouts_total") == 1.0
        # The answer, if it comes now, finds nobody waiting: an honest error, counted.
        late = http.post(
            f"{base}/mcp",
            json=exchange.answer_request(asked, {})[1],
            headers=client.session.headers(),
        )
        assert late.status_code == 400 and "No call waits" in late.json()["error"]["message"]
        assert metric(base, 'legacy_answers_total{outcome="unknown_request"}') == 1.0


def test_keep_alive_comments_flow_while_the_user_thinks() -> None:
    with (
        live_replica(legacy_keepalive_interval_s=0.05) as base,
        httpx.Client(timeout=10) as http,
        LegacyClient(f"{base}/mcp", http=http, handlers=user_answers()) as client,
    ):
        exchange, (stream, lines) = open_held_call(client, http, {"location": "Rome"})
        try:
            while exchange.decoder.comments < 3:
                exchange.feed_line(next(lines))
            (asked,) = exchange.server_requests
            headers, body = exchange.answer_request(asked, accept(name="slow"))
            assert http.post(client.url, json=body, headers=headers).status_code == 202
            while not exchange.done:
                exchange.feed_line(next(lines))
        finally:
            stream.__exit__(None, None, None)
    assert exchange.text.startswith("Weather in Rome for slow:")


def test_a_client_that_hangs_up_abandons_its_call_and_frees_its_memory(replica: str) -> None:
    with httpx.Client(timeout=10) as http:
        client = LegacyClient(f"{replica}/mcp", http=http, handlers=user_answers())
        client.initialize()
        _, (stream, _) = open_held_call(client, http, {"location": "Paris"})
        assert health(replica)["waiting_calls"] == 1
        stream.__exit__(None, None, None)
        wait_for(lambda: holds_nothing(replica))


def test_deleting_the_session_ends_its_held_calls(replica: str) -> None:
    with httpx.Client(timeout=10) as http:
        client = LegacyClient(f"{replica}/mcp", http=http, handlers=user_answers())
        client.initialize()
        exchange, (stream, lines) = open_held_call(client, http, {"location": "Bern"})
        try:
            assert http.delete(client.url, headers=client.session.headers()).status_code == 204
            with pytest.raises(McpError, match="cancelled"):
                for line in lines:
                    exchange.feed_line(line)
        finally:
            stream.__exit__(None, None, None)
        wait_for(lambda: holds_nothing(replica))


@pytest.mark.integration
def test_the_memory_estimate_is_of_the_order_of_the_measured_working_set() -> None:
    """Hold many calls in a replica process; compare its RSS growth with the estimate."""
    # The probe holds its 200 calls as one anonymous principal: the per-principal cap on
    # held calls (32 by default) is lifted for it.
    with ServerProcess(args=["--max-held-calls-per-principal", "0"]) as server:
        held = measure_held_calls(server.base_url, server.pid, 200)
    grown, estimate = held["rss_bytes_per_call"], held["object_graph_bytes_per_call"]
    print(
        f"\nheld get_weather call: RSS +{grown / 1024:.1f} KiB, estimate {estimate / 1024:.1f} KiB"
    )
    # The estimate counts the call's objects, not the HTTP server's connection buffers.
    assert grown / 10 < estimate < grown * 1.5

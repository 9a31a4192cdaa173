"""The official `mcp` Python client (2.x), with its own MRTR loop, against a real replica."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client, types

from server.harness.process import ServerProcess

pytestmark = pytest.mark.integration


async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    """A user who answers whatever form they are shown."""
    fields = set((params.requested_schema or {}).get("properties", {}))
    if "resolution" in fields:
        return types.ElicitResult(action="accept", content={"resolution": "Duplicate"})
    if "duplicateOfId" in fields:
        return types.ElicitResult(action="accept", content={"duplicateOfId": 4301})
    if "answer" in fields:  # the rounds tool's questions
        return types.ElicitResult(action="accept", content={"answer": params.message})
    login = params.message.split()[3].lower()  # "Please provide your <Provider> username"
    return types.ElicitResult(action="accept", content={"name": f"{login}-user"})


async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="Paris"),
        model="test-model",
        stop_reason="endTurn",
    )


@pytest.fixture(scope="module")
def replica():
    with ServerProcess() as server:
        yield server


def call(url: str, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async def run() -> types.CallToolResult:
        async with Client(url, elicitation_callback=elicit, sampling_callback=sample) as client:
            assert client.protocol_version == "2026-07-28"
            return await client.call_tool(name, arguments)

    return asyncio.run(run())


def text_of(result: types.CallToolResult) -> str:
    assert result.is_error is False
    return result.content[0].text


def test_official_client_completes_get_weather(replica: ServerProcess) -> None:
    assert text_of(call(replica.url, "get_weather", {"location": "Lisbon"})).startswith(
        "Weather in Lisbon for github-user:"
    )


def test_official_client_completes_both_rounds_of_update_work_item(replica: ServerProcess) -> None:
    arguments = {"workItemId": 4522, "fields": {"System.State": "Resolved"}}
    assert text_of(call(replica.url, "update_work_item", arguments)) == (
        "Bug #4522 resolved as Duplicate of Bug #4301"
    )


def test_official_client_completes_ask_capital(replica: ServerProcess) -> None:
    assert "Paris" in text_of(call(replica.url, "ask_capital", {"country": "France"}))


def test_official_client_completes_link_accounts(replica: ServerProcess) -> None:
    assert text_of(call(replica.url, "link_accounts", {})) == (
        "Linked accounts: github=github-user, google=google-user"
    )


def test_official_client_completes_every_round_of_a_rounds_call(replica: ServerProcess) -> None:
    arguments = {"rounds": 3, "questions_per_round": 2, "cpu_ms_per_round": 1}
    assert text_of(call(replica.url, "rounds", arguments)) == (
        "3 rounds, 4 questions answered, 1 ms of CPU a round"
    )

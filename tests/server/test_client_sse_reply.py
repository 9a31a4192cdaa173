"""A 2025-11-25 server may answer any POST as an SSE stream (the official SDK does by
default): the reference legacy client and the load test's users open a session either way."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from loadtest.users.http_interface import HttpxLegacy
from loadtest.users.legacy_flow import SessionHolder
from server.client import LegacyClient, reply_message

SESSION = "4f2c"


def _initialize_answer(request: httpx.Request, as_stream: bool) -> httpx.Response:
    """An initialize answered as the official SDK answers it, as SSE or as JSON."""
    body = json.loads(request.content)
    if body.get("method") != "initialize":
        return httpx.Response(202)
    message: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": body["id"],
        "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "peer", "version": "1"}},
    }  # fmt: skip
    headers = {"mcp-session-id": SESSION}
    if not as_stream:
        return httpx.Response(200, json=message, headers=headers)
    text = f"event: message\ndata: {json.dumps(message)}\n\n"
    return httpx.Response(
        200, content=text.encode(), headers={**headers, "content-type": "text/event-stream"}
    )


@pytest.mark.parametrize("as_stream", [True, False])
def test_the_legacy_client_opens_a_session_answered_as_sse_or_json(as_stream: bool) -> None:
    transport = httpx.MockTransport(lambda request: _initialize_answer(request, as_stream))
    client = LegacyClient("http://peer/mcp", transport=transport)
    session = client.initialize()
    assert session.session_id == SESSION
    assert session.server_info["name"] == "peer"


@pytest.mark.parametrize("as_stream", [True, False])
def test_a_load_test_user_opens_a_session_answered_as_sse_or_json(as_stream: bool) -> None:
    transport = httpx.MockTransport(lambda request: _initialize_answer(request, as_stream))
    with httpx.Client(transport=transport) as http:
        session = SessionHolder().open(HttpxLegacy(http, "http://peer/mcp"))
    assert session.session_id == SESSION


def test_a_stream_reply_yields_its_response_not_a_notification_before_it() -> None:
    text = (
        'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n'
        'data: {"jsonrpc":"2.0","id":3,"result":{"ok":true}}\n\n'
    )
    message = reply_message("text/event-stream", text.encode())
    assert message == {"jsonrpc": "2.0", "id": 3, "result": {"ok": True}}
    assert reply_message("application/json", b"<html>") is None

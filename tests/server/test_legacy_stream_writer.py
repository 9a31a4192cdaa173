"""Who writes a held legacy call's stream: the call's own task, as soon as it has a message.

Handing each message to another task (a streaming response's generator) made it wait its
turn on the event loop behind every request ready at that moment: near saturation, most
of a round per message. These drive the ASGI app directly and note which task sent each
ASGI message of the `tools/call` response.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from server.app import create_app
from server.protocol.versions import LEGACY_VERSION
from tests.server.conftest import LEGACY_INITIALIZE, make_config

HEADERS = {
    "host": "127.0.0.1",
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": LEGACY_VERSION,
}


class Exchange:
    """One POST /mcp on the ASGI app: what it sent back, and from which task."""

    def __init__(self, app: Any, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.app = app
        self.body = json.dumps(body).encode()
        self.headers = [(k.encode(), v.encode()) for k, v in headers.items()]
        self.sent: list[tuple[dict[str, Any], asyncio.Task[Any] | None]] = []
        self.hang_up = asyncio.Event()
        self._body_read = False

    async def receive(self) -> dict[str, Any]:
        if not self._body_read:
            self._body_read = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.hang_up.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append((message, asyncio.current_task()))

    async def run(self) -> None:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": self.headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        await self.app(scope, self.receive, self.send)

    def header(self, name: bytes) -> str:
        start = next(m for m, _ in self.sent if m["type"] == "http.response.start")
        return dict(start["headers"]).get(name, b"").decode()


async def _session(app: Any) -> str:

    exchange = Exchange(
        app, LEGACY_INITIALIZE, {k: v for k, v in HEADERS.items() if k != "mcp-protocol-version"}
    )
    await exchange.run()
    session = exchange.header(b"mcp-session-id")
    assert session
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await Exchange(app, note, {**HEADERS, "mcp-session-id": session}).run()
    return session


def _get_weather(app: Any, session: str, arguments: dict[str, Any]) -> Exchange:
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "get_weather", "arguments": arguments},
    }
    return Exchange(app, body, {**HEADERS, "mcp-session-id": session})


def test_the_held_call_writes_its_question_from_its_own_task() -> None:
    async def scenario() -> None:
        app = create_app(make_config())
        session = await _session(app)
        exchange = _get_weather(app, session, {"location": "Paris"})
        request = asyncio.create_task(exchange.run())
        for _ in range(200):  # until the question is on the stream
            await asyncio.sleep(0.005)
            if any(m.get("body", b"").startswith(b"event: message") for m, _ in exchange.sent):
                break
        messages = [m for m, _ in exchange.sent]
        assert messages[0]["type"] == "http.response.start"
        assert exchange.header(b"content-type").startswith("text/event-stream")
        question = json.loads(messages[1]["body"].split(b"data: ", 1)[1])
        assert question["method"] == "elicitation/create"
        writers = {task for _, task in exchange.sent}
        # One task wrote the head and the question: not the POST's own, but the call's.
        assert len(writers) == 1 and request not in writers
        (writer,) = writers
        assert writer is not None and writer.get_coro().__qualname__.endswith("_hold.<locals>.run")
        # The client hangs up: the call is abandoned and the POST's task ends.
        exchange.hang_up.set()
        await asyncio.wait_for(request, 5)
        await asyncio.sleep(0.01)
        assert writer is not None and writer.done()

    asyncio.run(scenario())


def test_a_call_that_ends_without_asking_is_answered_with_one_json_message() -> None:
    async def scenario() -> None:
        app = create_app(make_config())
        session = await _session(app)
        # Arguments the tool's schema refuses: the call ends before it asks anything.
        exchange = _get_weather(app, session, {"city": "Paris"})
        await asyncio.wait_for(exchange.run(), 5)
        (_, writer), (payload, also) = exchange.sent
        assert writer is also and writer is not None  # the call's task wrote both
        assert exchange.header(b"content-type") == "application/json"
        assert not payload.get("more_body", False)
        answer = json.loads(payload["body"])
        assert answer["id"] == 2 and "location" in answer["error"]["message"]

    asyncio.run(scenario())

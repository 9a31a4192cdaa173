"""A hostile MCP server for the lab's clients: the lab's own replica behind a filter that
spoils its replies in one way, chosen by the first part of the path
(`http://127.0.0.1:PORT/<mode>/mcp`):

    trickle      every reply's head, then its body a byte every half second
    empty-enum   `tools/list` lists each tool with an argument whose enum is empty
    inf-metrics  `/metrics` says `process_resident_memory_bytes +Inf` (and each
                 `tools/call` answers 20 ms late, so that its rounds stand out from a
                 ping's however busy the machine, and `measure` reaches `/metrics`)
    string-error `tools/call` answers an `error` that is a string
    not-json     `tools/call` answers a body that is not JSON
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from server.app import create_app
from server.harness.process import free_port, wait_until_healthy
from tests.server.conftest import make_config

MODES = ("trickle", "empty-enum", "inf-metrics", "string-error", "not-json")
#: What inf-metrics adds to each tool call's answer (s).
SLOW_CALL_S = 0.02


def _spoiled(mode: str, request: dict[str, Any], body: bytes) -> bytes:
    method = request.get("method")
    if mode == "empty-enum" and method == "tools/list":
        reply = json.loads(body)
        for tool in reply.get("result", {}).get("tools", []):
            schema = tool.setdefault("inputSchema", {"type": "object"})
            schema.setdefault("properties", {})["units"] = {"type": "string", "enum": []}
            schema["required"] = [*schema.get("required", []), "units"]
        return json.dumps(reply).encode()
    if mode == "string-error" and method == "tools/call":
        return json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": "boom"}).encode()
    if mode == "not-json" and method == "tools/call":
        return b"<html>upstream fell over</html>"
    return body


class Hostile:
    """The ASGI filter: the replica's reply, spoiled as the path's mode says."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        mode, _, rest = scope["path"].lstrip("/").partition("/")
        if mode not in MODES:
            return await self.app(scope, receive, send)
        scope = {**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}
        if mode == "inf-metrics" and rest == "metrics":
            text = (
                b"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes +Inf\n"
            )
            await send({"type": "http.response.start", "status": 200, "headers": []})
            return await send({"type": "http.response.body", "body": text})
        chunks: list[bytes] = []

        async def receive_body() -> Any:
            message = await receive()
            chunks.append(message.get("body", b""))
            return message

        start: dict[str, Any] = {}
        body: list[bytes] = []
        streams = False  # an SSE stream (2025-11-25) passes as it comes, but for trickle

        async def keep(message: dict[str, Any]) -> None:
            nonlocal streams
            if message["type"] == "http.response.start":
                if mode == "inf-metrics" and b'"tools/call"' in b"".join(chunks):
                    await asyncio.sleep(SLOW_CALL_S)
                start.update(message)
                kind = dict(message.get("headers", [])).get(b"content-type", b"")
                streams = kind.startswith(b"text/event-stream") and mode != "trickle"
                if streams:
                    await send(message)
            elif streams:
                await send(message)
            else:
                body.append(message.get("body", b""))

        await self.app(scope, receive_body, keep)
        if streams:
            return None
        try:
            request = json.loads(b"".join(chunks) or b"{}")
        except ValueError:
            request = {}
        reply = _spoiled(mode, request if isinstance(request, dict) else {}, b"".join(body))
        headers = start.get("headers", [])
        if reply != b"".join(body):  # a spoiled reply: a body of its own, said as JSON
            headers = [(b"content-type", b"application/json")]
        headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(reply)).encode()))
        await send({"type": "http.response.start", "status": start["status"], "headers": headers})
        if mode != "trickle":
            return await send({"type": "http.response.body", "body": reply})
        for k in range(len(reply)):
            await send({"type": "http.response.body", "body": reply[k : k + 1], "more_body": True})
            await asyncio.sleep(0.5)
        await send({"type": "http.response.body", "body": b""})


@contextmanager
def hostile_server() -> Iterator[str]:
    """The hostile server in a thread; yields its base URL (add `/<mode>/mcp`)."""
    port = free_port()
    config = uvicorn.Config(
        Hostile(create_app(make_config())),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}/healthz", 10.0)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10.0)

"""POST /mcp, served without Starlette's router: its own errors, disconnects and routing."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.protocol.jsonrpc import INTERNAL_ERROR
from tests.server.test_bad_input import headers
from tests.server.test_transport import discover


def test_a_bug_before_the_message_is_read_still_answers_a_json_rpc_500(
    app: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(scope: Any) -> Any:
        raise RuntimeError("a bug in the guard")

    monkeypatch.setattr(app.state.server.guard, "admit_request", broken)
    with (
        caplog.at_level(logging.ERROR, "server"),
        TestClient(app, base_url="http://127.0.0.1") as http,
    ):
        response = discover(http, headers("server/discover"))
        metrics = http.get("/metrics").text
    assert response.status_code == 500
    assert response.json()["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert "internal error serving a request" in caplog.text
    assert 'mcp_requests_total{method="other",outcome="error"} 1.0' in metrics


def test_a_client_gone_before_its_body_gets_no_answer_and_no_error(app: Any) -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "method": "POST", "path": "/mcp", "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
    }  # fmt: skip
    asyncio.run(app(scope, receive, send))
    assert sent == []


def test_post_mcp_is_served_behind_a_root_path_and_other_paths_are_not(app: Any) -> None:
    # As uvicorn gives it behind `--root-path /lab`: the path includes the prefix.
    with TestClient(app, base_url="http://127.0.0.1/lab", root_path="/lab") as http:
        served = discover(http, headers("server/discover"))
        assert served.status_code == 200 and served.json()["result"]["resultType"] == "complete"
        assert http.post("/mcpx", json={}).status_code == 404
        assert http.get("/healthz").json()["status"] == "ok"

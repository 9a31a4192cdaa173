"""The legacy era's sessions (protocol 2025-11-25) on the shared /mcp endpoint, in-process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.client import Handlers, LegacyClient, McpError, accept
from server.config import ConfigError
from server.tools.crunch import crunch_start, crunch_units
from server.transport.auth import mint_token
from tests.server.conftest import JWT_SECRET, LEGACY_INITIALIZE, make_config

LEGACY = "2025-11-25"


@pytest.fixture
def http(app: Any) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


def open_session(http: TestClient, headers: dict[str, str] | None = None) -> dict[str, str]:
    """Initialize (no version header, as SDKs do) and return the headers of later requests."""
    response = http.post("/mcp", json=LEGACY_INITIALIZE, headers=headers or {})
    assert response.status_code == 200
    session = {
        "Mcp-Session-Id": response.headers["mcp-session-id"],
        "MCP-Protocol-Version": LEGACY,
        **(headers or {}),
    }
    notified = http.post(
        "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
    )
    assert notified.status_code == 202
    return session


def rpc(method: str, params: dict[str, Any] | None = None, rid: int = 7) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        body["params"] = params
    return body


def test_initialize_without_a_version_header_opens_a_legacy_session(http: TestClient) -> None:
    response = http.post("/mcp", json=LEGACY_INITIALIZE)
    result = response.json()["result"]
    assert result["protocolVersion"] == LEGACY
    assert result["serverInfo"]["name"] == "mrtr-lab"
    assert set(result["capabilities"]) >= {"tools", "prompts", "resources", "logging"}
    session_id = response.headers["mcp-session-id"]
    assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)


def test_initialize_with_the_legacy_version_header_opens_a_session(http: TestClient) -> None:
    response = http.post("/mcp", json=LEGACY_INITIALIZE, headers={"MCP-Protocol-Version": LEGACY})
    assert response.status_code == 200 and response.headers["mcp-session-id"]


def test_initialize_under_2026_07_28_is_method_not_found(http: TestClient) -> None:
    h = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "initialize"}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {**LEGACY_INITIALIZE, "params": {**LEGACY_INITIALIZE["params"], "_meta": meta}}
    response = http.post("/mcp", json=body, headers=h)
    assert response.status_code == 404 and response.json()["error"]["code"] == -32601
    assert "mcp-session-id" not in response.headers


def test_ping_and_tools_list_in_a_session_speak_2025_11_25(http: TestClient) -> None:
    session = open_session(http)
    assert http.post("/mcp", json=rpc("ping"), headers=session).json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {},
    }
    result = http.post("/mcp", json=rpc("tools/list"), headers=session).json()["result"]
    assert "get_weather" in [t["name"] for t in result["tools"]]
    # The 2026-07-28 result fields do not exist in this protocol version.
    assert not {"resultType", "ttlMs", "cacheScope"} & set(result)


def test_requests_without_a_session_are_400_and_with_an_unknown_one_404(
    http: TestClient,
) -> None:
    missing = http.post("/mcp", json=rpc("tools/list"), headers={"MCP-Protocol-Version": LEGACY})
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32600
    unknown = http.post(
        "/mcp",
        json=rpc("tools/list"),
        headers={"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": "no-such-session"},
    )
    assert unknown.status_code == 404 and "Session not found" in unknown.json()["error"]["message"]
    # A session id without a version header is legacy too, and just as unknown.
    bare = http.post("/mcp", json=rpc("tools/list"), headers={"Mcp-Session-Id": "nope"})
    assert bare.status_code == 404


def test_delete_ends_the_session_and_later_requests_get_404(http: TestClient) -> None:
    session = open_session(http)
    assert http.delete("/mcp", headers=session).status_code == 204
    assert http.post("/mcp", json=rpc("ping"), headers=session).status_code == 404
    assert http.delete("/mcp", headers=session).status_code == 404


def test_delete_without_a_session_or_under_2026_07_28_is_405(http: TestClient) -> None:
    assert http.delete("/mcp").status_code == 405
    session = open_session(http)
    modern = {**session, "MCP-Protocol-Version": "2026-07-28"}
    assert http.delete("/mcp", headers=modern).status_code == 405
    assert http.get("/mcp", headers=session).status_code == 405


def test_a_session_is_not_found_for_another_principal(http: TestClient) -> None:
    alice = {"Authorization": "Bearer " + mint_token("alice", JWT_SECRET)}
    bob = {"Authorization": "Bearer " + mint_token("bob", JWT_SECRET)}
    session = open_session(http, alice)
    assert http.post("/mcp", json=rpc("ping"), headers=session).status_code == 200
    assert http.post("/mcp", json=rpc("ping"), headers={**session, **bob}).status_code == 404


def test_unknown_methods_and_bad_params_are_json_rpc_errors(http: TestClient) -> None:
    session = open_session(http)
    unknown = http.post("/mcp", json=rpc("server/discover"), headers=session).json()
    assert unknown["error"]["code"] == -32601
    bad_level = http.post("/mcp", json=rpc("logging/setLevel", {"level": "loud"}), headers=session)
    assert bad_level.json()["error"]["code"] == -32602
    no_tool = http.post("/mcp", json=rpc("tools/call", {"name": "nope"}), headers=session).json()
    assert no_tool["error"]["code"] == -32602


def test_log_level_and_subscriptions_are_kept_in_the_session(app: Any, http: TestClient) -> None:
    session = open_session(http)
    for method, params in [
        ("logging/setLevel", {"level": "info"}),
        ("resources/subscribe", {"uri": "vault://secret"}),
    ]:
        assert http.post("/mcp", json=rpc(method, params), headers=session).json()["result"] == {}
    store = app.state.server.legacy.store
    kept = asyncio.run(store.session(session["Mcp-Session-Id"]))
    assert kept.log_level == "info"
    assert asyncio.run(store.subscriptions(kept.session_id)) == ["vault://secret"]
    http.post("/mcp", json=rpc("resources/unsubscribe", {"uri": "vault://secret"}), headers=session)
    assert asyncio.run(store.subscriptions(kept.session_id)) == []


def test_a_call_that_never_asks_is_answered_with_plain_json(app: Any) -> None:
    with LegacyClient(
        "http://127.0.0.1/mcp", http=TestClient(app, base_url="http://127.0.0.1")
    ) as c:
        done = c.call_tool("crunch", {"units": 5})
    assert done.rounds[0].http_status == 200 and done.events == [done.rounds[0].response]
    assert done.result["structuredContent"]["replicas"] == ["replica-1"]
    assert "resultType" not in done.result


def test_offloading_is_a_no_op_under_legacy_the_call_runs_to_the_end() -> None:
    app = create_app(make_config(shed_every_units=1000))
    http = TestClient(app, base_url="http://127.0.0.1")
    with LegacyClient("http://127.0.0.1/mcp", http=http) as client:
        done = client.call_tool("crunch", {"units": 2500})
    assert len(done.rounds) == 1
    assert done.result["structuredContent"] == {
        "digest": crunch_units(crunch_start(), 0, 2500),
        "replicas": ["replica-1"],  # one attempt: nothing was shed
    }


def test_asking_for_a_capability_the_client_did_not_declare_is_an_error(app: Any) -> None:
    only_forms = Handlers(elicit=lambda params: accept(name="octocat"))
    http = TestClient(app, base_url="http://127.0.0.1")
    client = LegacyClient("http://127.0.0.1/mcp", http=http, handlers=only_forms)
    with client, pytest.raises(McpError) as raised:
        client.call_tool("ask_capital", {"country": "France"})
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"sampling": {}}}


def test_discover_and_the_unsupported_version_error_list_both_eras(http: TestClient) -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    h = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
    result = http.post("/mcp", json=rpc("server/discover", {"_meta": meta}), headers=h).json()
    assert result["result"]["supportedVersions"] == ["2026-07-28", LEGACY]
    old = {**h, "MCP-Protocol-Version": "2025-06-18"}
    meta_old = {**meta, "io.modelcontextprotocol/protocolVersion": "2025-06-18"}
    error = http.post("/mcp", json=rpc("server/discover", {"_meta": meta_old}), headers=old)
    assert error.status_code == 400
    assert error.json()["error"]["data"]["supported"] == ["2026-07-28", LEGACY]


def test_healthz_counts_the_sessions_that_live_only_on_this_replica(http: TestClient) -> None:
    open_session(http)
    open_session(http)
    health = http.get("/healthz").json()
    assert health["legacy_store"] == "memory" and health["open_sessions"] == 2
    assert 'legacy_sessions_total{event="created"} 2.0' in http.get("/metrics").text


def test_a_legacy_store_that_is_neither_memory_nor_redis_is_refused() -> None:
    with pytest.raises(ConfigError, match="legacy_store"):
        make_config(legacy_store="postgres://db")
    with pytest.raises(ConfigError, match="answer_timeout_s"):
        make_config(answer_timeout_s=0)
    out = subprocess.run(
        [sys.executable, "-m", "server", "--legacy-store", "etcd://x"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "legacy_store" in out.stderr and "Traceback" not in out.stderr


def test_sessions_expire_when_idle() -> None:
    app = create_app(make_config(legacy_session_ttl_s=0.05))
    with TestClient(app, base_url="http://127.0.0.1") as http:
        session = open_session(http)
        time.sleep(0.1)
        assert http.post("/mcp", json=rpc("ping"), headers=session).status_code == 404
        assert http.get("/healthz").json()["open_sessions"] == 0

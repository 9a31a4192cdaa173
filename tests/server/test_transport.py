"""The 2026-07-28 Streamable HTTP rules, health, metrics and the command line."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import jwt
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from server.client import MrtrClient
from server.transport.auth import ANONYMOUS, Authenticator, mint_token
from tests.server.conftest import JWT_SECRET
from tests.server.test_bad_input import META, headers


@pytest.fixture
def http(app: Any) -> Any:
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


def discover(http: TestClient, h: dict[str, str], meta: dict[str, Any] = META) -> Any:
    body = {"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": {"_meta": meta}}
    return http.post("/mcp", json=body, headers=h)


def test_get_and_delete_are_not_allowed(http: TestClient) -> None:
    assert http.get("/mcp").status_code == 405
    assert http.delete("/mcp").status_code == 405


def test_discover_lists_versions_capabilities_and_server_info(http: TestClient) -> None:
    result = discover(http, headers("server/discover")).json()["result"]
    assert result["supportedVersions"][0] == "2026-07-28"
    assert set(result["capabilities"]) >= {"tools", "prompts", "resources"}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mrtr-lab"
    assert result["resultType"] == "complete"
    assert result["cacheScope"] in ("public", "private") and result["ttlMs"] >= 0


def test_missing_meta_is_400_invalid_params(http: TestClient) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    response = discover(http, headers("server/discover"), meta)
    assert response.status_code == 400 and response.json()["error"]["code"] == -32602
    assert response.json()["id"] == 5


def test_version_header_must_match_meta(http: TestClient) -> None:
    h = {**headers("server/discover"), "MCP-Protocol-Version": "2099-01-01"}
    response = discover(http, h)
    assert response.status_code == 400 and response.json()["error"]["code"] == -32020


def test_unsupported_version_lists_supported_versions(http: TestClient) -> None:
    h = {**headers("server/discover"), "MCP-Protocol-Version": "v9"}
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "v9"}
    error = discover(http, h, meta).json()["error"]
    assert error["code"] == -32022
    assert error["data"] == {
        "supported": ["2026-07-28", *error["data"]["supported"][1:]],
        "requested": "v9",
    }


@pytest.mark.parametrize(
    ("method_header", "name_header", "ok"),
    [
        ("tools/call", "get_weather", True),
        ("  tools/call ", "  get_weather  ", True),
        ("TOOLS/CALL", "get_weather", False),
        ("tools/list", "get_weather", False),
        (None, "get_weather", False),
        ("tools/call", None, False),
        ("tools/call", "link_accounts", False),
    ],
)
def test_method_and_name_headers_must_match_the_body(
    http: TestClient, method_header: str | None, name_header: str | None, ok: bool
) -> None:
    h = {"MCP-Protocol-Version": "2026-07-28"}
    if method_header is not None:
        h["mcp-method"] = method_header
    if name_header is not None:
        h["MCP-NAME"] = name_header
    params = {"name": "get_weather", "arguments": {"location": "x"}, "_meta": META}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = http.post("/mcp", json=body, headers=h)
    if ok:
        assert response.status_code == 200 and "result" in response.json()
    else:
        assert response.status_code == 400 and response.json()["error"]["code"] == -32020


def test_notifications_are_accepted_without_a_body(http: TestClient) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    response = http.post("/mcp", json=body, headers=headers("notifications/cancelled"))
    assert response.status_code == 202 and response.content == b""


def test_foreign_host_is_refused_on_loopback(app: Any) -> None:
    with TestClient(app, base_url="http://evil.example.com") as client:
        response = discover(client, headers("server/discover"))
    assert response.status_code == 403


def test_progress_notifications_stream_before_the_result(http: TestClient) -> None:
    params = {"name": "crunch", "arguments": {"units": 10}, "_meta": {**META, "progressToken": "p"}}
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
    response = http.post("/mcp", json=body, headers=headers("tools/call", "crunch"))
    assert response.headers["content-type"].startswith("text/event-stream")
    assert '"id":9' in response.text and '"resultType":"complete"' in response.text


def test_healthz_reports_replica_version_and_in_flight(http: TestClient) -> None:
    body = http.get("/healthz").json()
    assert body == {
        "status": "ok",
        "replica_id": "replica-1",
        "tool_version": 1,
        "in_flight": 0,
        # Legacy (2025-11-25) sessions and held calls, which a drain waits for.
        "legacy_store": "memory",
        "open_sessions": 0,
        "open_streams": 0,
        "waiting_calls": 0,
        "waiting_memory_bytes": 0,
    }


def test_metrics_count_requests_by_method_and_outcome(app: Any, http: TestClient) -> None:
    with MrtrClient.for_app(app, handlers=None) as client:
        client.list_tools()
    exchange_app = MrtrClient.for_app(app)
    with exchange_app:
        exchange = exchange_app.exchange(
            "tools/call", {"name": "crunch", "arguments": {"units": 1}}
        )
        exchange_app.send(exchange)
    text = http.get("/metrics").text
    assert 'mcp_requests_total{method="tools/list",outcome="complete"} 1.0' in text
    assert 'mcp_requests_total{method="tools/call",outcome="complete"} 1.0' in text
    assert "mcp_in_flight_requests 0.0" in text
    assert "mrtr_input_required_results_total" in text


def test_metrics_show_the_garbage_collections_by_generation(http: TestClient) -> None:
    import gc

    gc.collect(0)
    counts = {
        s.labels["generation"]: s.value
        for family in text_string_to_metric_families(http.get("/metrics").text)
        if family.name == "python_gc_collections"
        for s in family.samples
    }
    assert set(counts) == {"0", "1", "2"} and counts["0"] >= 1


def test_tokens_name_the_principal() -> None:
    auth = Authenticator(JWT_SECRET)
    assert auth.principal(None) == ANONYMOUS
    assert auth.principal("Bearer " + mint_token("alice", JWT_SECRET)) == "alice"
    forged = jwt.encode({"sub": "alice"}, "another-secret-of-sufficient-length", "HS256")
    with pytest.raises(Exception, match="invalid token"):
        auth.principal("Bearer " + forged)


def test_token_command_prints_a_token_for_the_name() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "server", "token", "carol"],
        capture_output=True,
        text=True,
        env={"MRTR_JWT_SECRET": JWT_SECRET, "PATH": ""},
        check=True,
    )
    claims = jwt.decode(out.stdout.strip(), JWT_SECRET, algorithms=["HS256"])
    assert claims["sub"] == "carol"


def test_bad_cli_settings_are_a_clear_error() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "server", "--tool-version", "3"], capture_output=True, text=True
    )
    assert out.returncode == 2 and "invalid choice" in out.stderr and "Traceback" not in out.stderr

"""The 2025-11-25 era checks `Mcp-Method` and `Mcp-Name` where a client sends them.

A gateway may route on those headers without reading the body: a request whose headers
say one thing and body another is refused as the 2026-07-28 era refuses it (HTTP 400,
HeaderMismatch -32020). A 2025-11-25 client need not send them at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.protocol.jsonrpc import HEADER_MISMATCH
from tests.server.conftest import LEGACY_INITIALIZE
from tests.server.test_legacy_sessions import open_session, rpc

CALL = rpc("tools/call", {"name": "get_weather", "arguments": {"location": "Paris"}})


@pytest.fixture
def http(app: Any) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (rpc("tools/list"), {"Mcp-Method": "tools/call"}),
        (CALL, {"Mcp-Method": "tools/list"}),
        (CALL, {"Mcp-Method": "tools/call", "Mcp-Name": "provision_vm"}),
    ],
)
def test_a_header_that_contradicts_the_body_is_refused(
    http: TestClient, body: dict[str, Any], headers: dict[str, str]
) -> None:
    session = open_session(http)
    response = http.post("/mcp", json=body, headers={**session, **headers})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == HEADER_MISMATCH


@pytest.mark.parametrize(
    "headers", [{}, {"Mcp-Method": "tools/list"}, {"Mcp-Method": " tools/list "}]
)
def test_absent_or_matching_headers_are_served(http: TestClient, headers: dict[str, str]) -> None:
    session = open_session(http)
    response = http.post("/mcp", json=rpc("tools/list"), headers={**session, **headers})
    assert response.status_code == 200
    assert "tools" in response.json()["result"]


def test_a_contradicting_header_on_initialize_is_refused(http: TestClient) -> None:
    response = http.post("/mcp", json=LEGACY_INITIALIZE, headers={"Mcp-Method": "tools/list"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == HEADER_MISMATCH

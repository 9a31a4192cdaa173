"""Bad input gets a clean 4xx or JSON-RPC error, and the server keeps serving."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from server.app import create_app
from server.protocol.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from tests.server.conftest import make_config

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
}


def headers(method: str, name: str | None = None) -> dict[str, str]:
    h = {"MCP-Protocol-Version": VERSION, "Mcp-Method": method, "Content-Type": "application/json"}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def call_body(name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": META, **extra}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


@pytest.fixture(scope="module")
def http() -> Iterator[TestClient]:
    app = create_app(make_config(max_body_bytes=64 * 1024))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield client


def still_serving(http: TestClient) -> bool:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": META}}
    response = http.post("/mcp", json=body, headers=headers("tools/list"))
    return response.status_code == 200 and "tools" in response.json()["result"]


def error_of(response: Any) -> dict[str, Any]:
    return response.json()["error"]


def test_malformed_json_is_a_parse_error(http: TestClient) -> None:
    response = http.post("/mcp", content=b"{not json", headers=headers("tools/list"))
    assert response.status_code == 400
    assert error_of(response)["code"] == PARSE_ERROR
    assert still_serving(http)


@pytest.mark.parametrize(
    "payload", [[], [1, 2], "x", 3, {"jsonrpc": "1.0", "id": 1, "method": "a"}]
)
def test_not_a_request_object_is_an_invalid_request(http: TestClient, payload: Any) -> None:
    response = http.post("/mcp", content=json.dumps(payload), headers=headers("tools/list"))
    assert response.status_code == 400
    assert error_of(response)["code"] == INVALID_REQUEST
    assert still_serving(http)


@pytest.mark.parametrize("params", [[], "x", 5, True])
def test_non_object_params_are_invalid_params(http: TestClient, params: Any) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
    response = http.post("/mcp", json=body, headers=headers("tools/list"))
    assert error_of(response)["code"] == INVALID_PARAMS
    assert still_serving(http)


@pytest.mark.parametrize("location", [5, None, ["a"], {"x": 1}])
def test_wrong_argument_types_are_invalid_params(http: TestClient, location: Any) -> None:
    body = call_body("get_weather", {"location": location})
    response = http.post("/mcp", json=body, headers=headers("tools/call", "get_weather"))
    assert response.status_code == 200
    assert error_of(response)["code"] == INVALID_PARAMS
    assert "location" in error_of(response)["message"]
    assert still_serving(http)


@pytest.mark.parametrize("responses", [None, [], "x", 12, {"github_login": 12}, {"a": [1]}])
def test_input_responses_of_the_wrong_shape_are_invalid_params(
    http: TestClient, responses: Any
) -> None:
    body = call_body("get_weather", {"location": "x"}, inputResponses=responses)
    response = http.post("/mcp", json=body, headers=headers("tools/call", "get_weather"))
    assert error_of(response)["code"] == INVALID_PARAMS
    assert still_serving(http)


def test_an_answer_that_does_not_fit_the_schema_is_asked_again(http: TestClient) -> None:
    wrong = {"github_login": {"action": "accept", "content": {"nom": "x"}}}
    body = call_body("get_weather", {"location": "x"}, inputResponses=wrong)
    result = http.post("/mcp", json=body, headers=headers("tools/call", "get_weather")).json()
    assert result["result"]["resultType"] == "input_required"
    assert list(result["result"]["inputRequests"]) == ["github_login"]


def test_unknown_tool_and_method(http: TestClient) -> None:
    body = call_body("no_such_tool", {})
    response = http.post("/mcp", json=body, headers=headers("tools/call", "no_such_tool"))
    assert error_of(response)["code"] == INVALID_PARAMS
    body = {"jsonrpc": "2.0", "id": 3, "method": "no/such", "params": {"_meta": META}}
    response = http.post("/mcp", json=body, headers=headers("no/such"))
    assert response.status_code == 404
    assert error_of(response) == {"code": METHOD_NOT_FOUND, "message": "Method not found: no/such"}
    assert response.json()["id"] == 3


def test_oversized_body_is_413_and_the_server_keeps_serving(http: TestClient) -> None:
    body = call_body("get_weather", {"location": "x" * 100_000})
    response = http.post("/mcp", json=body, headers=headers("tools/call", "get_weather"))
    assert response.status_code == 413
    assert still_serving(http)


def test_requests_without_a_declared_capability_get_32021(http: TestClient) -> None:
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": {}}
    body = call_body("get_weather", {"location": "x"})
    body["params"]["_meta"] = meta
    response = http.post("/mcp", json=body, headers=headers("tools/call", "get_weather"))
    assert response.status_code == 400
    assert error_of(response)["code"] == -32021
    assert error_of(response)["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_invalid_bearer_token_is_401(http: TestClient) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}
    h = {**headers("tools/list"), "Authorization": "Bearer not-a-jwt"}
    response = http.post("/mcp", json=body, headers=h)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert still_serving(http)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
methods = st.sampled_from(
    ["tools/call", "tools/list", "prompts/get", "resources/read", "server/discover", "x"]
)
names = st.sampled_from(
    ["get_weather", "update_work_item", "link_accounts", "crunch", "greeting", "vault://secret"]
)

PARAM_KEYS = ["name", "uri", "arguments", "inputResponses", "requestState", "_meta", "task"]


@st.composite
def requests(draw: st.DrawFn) -> tuple[dict[str, str], bytes]:
    method = draw(methods)
    params: dict[str, Any] = {"_meta": META}
    for key in draw(st.sets(st.sampled_from(PARAM_KEYS))):
        named = key in ("name", "uri") and draw(st.booleans())
        params[key] = draw(names) if named else draw(json_values)
    body: Any = {"jsonrpc": "2.0", "id": draw(st.integers(0, 9)), "method": method}
    body["params"] = params if draw(st.booleans()) else draw(json_values)
    name = params.get("name")
    h = headers(method, name if isinstance(name, str) and name.isascii() else None)
    if draw(st.booleans()):
        h["Mcp-Method"] = draw(st.text(st.characters(min_codepoint=32, max_codepoint=126)))
    raw = json.dumps(body).encode()
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(0, len(raw)))]
    return h, raw


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=requests())
def test_fuzzed_requests_never_get_a_5xx(request: tuple[dict[str, str], bytes]) -> None:
    h, raw = request
    response = FUZZ_CLIENT.post("/mcp", content=raw, headers=h)
    assert response.status_code < 500, response.text


FUZZ_CLIENT = TestClient(
    create_app(make_config()), base_url="http://127.0.0.1", raise_server_exceptions=False
)

"""The server under attack: origins, repeated headers, deep nesting, tokens, public keys.

Each attack is sent over HTTP to a replica in its own process where the HTTP server's
own parsing matters (repeated headers, origins), else to the app in process.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from server.app import create_app
from server.client import SEED, Exchange, McpError, MrtrClient, accept, task_capabilities
from server.config import ServerConfig, StateKey
from server.harness.process import ServerProcess
from server.keys import DEV_JWT_SECRET, DEV_STATE_KEY
from server.mrtr.state import Origin, StateSealer
from server.protocol.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_DEPTH,
    PARSE_ERROR,
    RpcError,
    decode,
    nested_deeper_than,
)
from server.transport.auth import ANONYMOUS, mint_token
from tests.server.conftest import JWT_SECRET, KEY_A, make_config, state_keys_env, user_answers
from tests.server.test_bad_input import call_body, headers

WEATHER = {"location": "Paris"}
DEV_KEY = base64.b64decode(DEV_STATE_KEY)
LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def replica() -> Iterator[ServerProcess]:
    """One replica on loopback that also allows one remote page origin."""
    env = {**os.environ, "MRTR_JWT_SECRET": JWT_SECRET}
    process = ServerProcess(args=["--allow-origin", "https://app.example.com/"], env=env)
    process.start()
    yield process
    process.stop()


def post(url: str, body: dict[str, Any], extra: list[tuple[str, str]]) -> httpx.Response:
    name = body["params"].get("name")
    sent = [*headers(body["method"], name).items(), *extra]
    return httpx.post(url, json=body, headers=sent, timeout=10)


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://localhost:5173", 200),  # a page on this machine, to a loopback bind
        ("https://app.example.com", 200),  # listed with --allow-origin
        ("HTTPS://APP.EXAMPLE.COM/", 200),  # origins compare without case or a final slash
        ("null", 403),  # sandboxed frames and files
        ("https://evil.example", 403),
        ("http://localhost.evil.example", 403),
    ],
)
@pytest.mark.integration
def test_a_page_origin_must_be_allowed(replica: ServerProcess, origin: str, status: int) -> None:
    reply = post(replica.url, call_body("get_weather", WEATHER), [("Origin", origin)])
    assert reply.status_code == status
    if status == 403:
        assert reply.json()["error"]["message"] == "Forbidden origin"


def test_origin_is_checked_on_a_non_loopback_bind_too() -> None:
    app = create_app(
        make_config(
            loopback_only=False, allow_anonymous=True, allowed_origins=("https://ok.example",)
        )
    )
    with TestClient(app, base_url="http://mcp.example.com") as http:
        body = call_body("get_weather", WEATHER)
        sent = headers("tools/call", "get_weather")
        assert http.post("/mcp", json=body, headers=sent).status_code == 200  # no Origin
        for origin, status in [
            ("https://ok.example", 200),
            ("http://localhost:3000", 403),  # this machine is not the server's machine here
            ("null", 403),
        ]:
            reply = http.post("/mcp", json=body, headers={**sent, "Origin": origin})
            assert reply.status_code == status, origin


@pytest.mark.parametrize(
    "repeated",
    [
        [("Mcp-Name", "get_weather"), ("Mcp-Name", "crunch")],
        [("Mcp-Method", "tools/call"), ("Mcp-Method", "tools/list")],
        [("Authorization", "Bearer a"), ("Authorization", "Bearer b")],
    ],
)
@pytest.mark.integration
def test_a_repeated_routing_header_is_a_400(
    replica: ServerProcess, repeated: list[tuple[str, str]]
) -> None:
    body = call_body("get_weather", WEATHER)
    sent = {k: v for k, v in headers("tools/call", "get_weather").items()}
    for name, _ in repeated:
        sent.pop(name, None)
    reply = httpx.post(replica.url, json=body, headers=[*sent.items(), *repeated], timeout=10)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == INVALID_REQUEST
    assert repeated[0][0].lower() in reply.json()["error"]["message"]


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"next": value}
    return value


@pytest.fixture(scope="module")
def http() -> Iterator[TestClient]:
    app = create_app(make_config())
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 5000])
def test_deep_nesting_is_a_clean_400(http: TestClient, depth: int) -> None:
    # Written by hand: Python's own JSON encoder cannot nest this deep either.
    fields = '{"next":' * depth + '"bottom"' + "}" * depth
    text = json.dumps(call_body("update_work_item", {"workItemId": 1, "fields": "FIELDS"}))
    body = text.replace('"FIELDS"', fields).encode()
    reply = http.post("/mcp", content=body, headers=headers("tools/call", "update_work_item"))
    assert reply.status_code == 400
    # Too deep for the server's limit, or (past 1,024 levels) for the JSON parser itself.
    assert reply.json()["error"]["code"] in (INVALID_REQUEST, PARSE_ERROR)


def test_nesting_within_the_limit_is_served(http: TestClient) -> None:
    body = call_body("update_work_item", {"workItemId": 1, "fields": nested(MAX_DEPTH - 8)})
    reply = http.post("/mcp", json=body, headers=headers("tools/call", "update_work_item"))
    assert reply.status_code == 200
    assert reply.json()["result"]["resultType"] == "complete"


def test_many_brackets_at_little_depth_are_served(http: TestClient) -> None:
    # More `{` and `[` than the depth limit, side by side and inside strings: the byte
    # count that spares most bodies the walk must not refuse a shallow one.
    fields = {f"f{i}": {"v": [i]} for i in range(MAX_DEPTH)} | {"text": "{[" * MAX_DEPTH}
    body = call_body("update_work_item", {"workItemId": 1, "fields": fields})
    reply = http.post("/mcp", json=body, headers=headers("tools/call", "update_work_item"))
    assert reply.status_code == 200
    assert reply.json()["result"]["resultType"] == "complete"


@given(depth=st.integers(min_value=0, max_value=2 * MAX_DEPTH), width=st.integers(0, 3))
def test_the_depth_check_agrees_with_the_nesting(depth: int, width: int) -> None:
    value: Any = "bottom"
    for level in range(depth):
        value = [value, *range(width)] if level % 2 else {"next": value, "n": width}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"v": value}})
    too_deep = depth + 2 > MAX_DEPTH  # the envelope and params are two levels more
    assert nested_deeper_than(json.loads(body), MAX_DEPTH) is too_deep
    if too_deep:
        with pytest.raises(RpcError) as refused:
            decode(body.encode())
        assert refused.value.code == INVALID_REQUEST
    else:
        assert decode(body.encode()) == json.loads(body)


def test_legacy_set_level_of_the_wrong_type_is_invalid_params(http: TestClient) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
    }
    opened = http.post("/mcp", json=init)
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
    for level in ([], {}, 3, None):
        body = {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": level}}
        reply = http.post("/mcp", json=body, headers=session)
        assert reply.json()["error"]["code"] == INVALID_PARAMS, level


def bearer(claims: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {jwt.encode(claims, JWT_SECRET, 'HS256')}"}


def test_a_token_must_expire_unless_allowed(http: TestClient) -> None:
    body = call_body("get_weather", WEATHER)
    sent = headers("tools/call", "get_weather")
    forever = bearer({"sub": "alice"})
    refused = http.post("/mcp", json=body, headers={**sent, **forever})
    assert refused.status_code == 401
    assert "exp" in refused.json()["error"]["message"]
    assert refused.headers["www-authenticate"].startswith("Bearer")
    relaxed = create_app(make_config(jwt_allow_no_exp=True))
    with TestClient(relaxed, base_url=LOCAL) as other:
        assert other.post("/mcp", json=body, headers={**sent, **forever}).status_code == 200
    expiring = bearer({"sub": "alice", "exp": int(time.time()) + 60})
    assert http.post("/mcp", json=body, headers={**sent, **expiring}).status_code == 200


def test_require_auth_turns_anonymous_callers_away() -> None:
    app = create_app(make_config(require_auth=True))
    with MrtrClient.for_app(app, handlers=user_answers()) as anonymous:
        with pytest.raises(McpError) as refused:
            anonymous.call_tool("get_weather", WEATHER)
        assert refused.value.http_status == 401
    token = mint_token("alice", JWT_SECRET, ttl_s=60)
    with MrtrClient.for_app(app, handlers=user_answers(), token=token) as alice:
        assert "octocat" in alice.call_tool("get_weather", WEATHER).text


def test_a_delete_with_a_bad_token_is_challenged(http: TestClient) -> None:
    reply = http.delete(
        "/mcp", headers={"Mcp-Session-Id": "x", "Authorization": "Bearer not-a-token"}
    )
    assert reply.status_code == 401
    assert reply.headers["www-authenticate"].startswith("Bearer")


def test_anonymous_callers_do_not_see_each_others_tasks() -> None:
    app = create_app(make_config())
    with MrtrClient.for_app(app, handlers=user_answers(echo_input={"input": "hi"})) as first:
        flow = first.call_tool_as_task("echo", wire="seed")
        assert flow.task_id
    with MrtrClient.for_app(app, handlers=user_answers()) as second:
        capabilities = task_capabilities(second.options.capabilities(), SEED)
        listed = second.run(Exchange("tasks/list", {}, capabilities))
        assert listed.result is not None and listed.result["tasks"] == []


def start_beyond_loopback(*flags: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # 192.0.2.1 is a documentation address: nothing may bind it, so a start that got past
    # the key check would fail on the bind, with a different message.
    command = [sys.executable, "-m", "server", "--host", "192.0.2.1", "--port", "9", *flags]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("unset", ["MRTR_STATE_KEYS", "MRTR_JWT_SECRET"])
def test_public_development_keys_are_refused_beyond_loopback(unset: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MRTR_")}
    env["MRTR_JWT_SECRET"] = JWT_SECRET
    env["MRTR_STATE_KEYS"] = state_keys_env(KEY_A)
    del env[unset]
    refused = start_beyond_loopback(env=env)
    assert refused.returncode != 0
    assert unset in refused.stderr
    assert "--allow-development-keys" in refused.stderr
    allowed = start_beyond_loopback("--allow-development-keys", env=env)
    assert "refusing to serve" not in allowed.stderr  # it went on, and failed to bind


def test_an_error_names_no_internal_address() -> None:
    # A task store nobody listens on: the client learns the store failed, not where it is.
    app = create_app(make_config(task_store="redis://127.0.0.1:9/0", task_store_timeout_s=0.2))
    handlers = user_answers(echo_input={"input": "x"})
    with MrtrClient.for_app(app, handlers=handlers) as client, pytest.raises(McpError) as failed:
        client.call_tool_as_task("echo", wire="seed")
    assert failed.value.code == INTERNAL_ERROR
    assert "127.0.0.1" not in failed.value.message and ":9" not in failed.value.message


JUNK = {f"junk{i}": {"action": "accept", "content": {}} for i in range(2000)}


def opened_state(exchange: Exchange, name: str, arguments: dict[str, Any]) -> Any:
    origin = Origin.of(ANONYMOUS, "tools/call", name, arguments)
    return StateSealer((KEY_A,), 600).open(exchange.request_state, origin)


def test_answers_nobody_asked_for_are_not_sealed() -> None:
    app = create_app(make_config())
    arguments = {"workItemId": 7, "fields": {"System.State": "Resolved"}}
    with MrtrClient.for_app(app, handlers=user_answers()) as client:
        params = {"name": "update_work_item", "arguments": arguments}
        exchange = client.exchange("tools/call", params)
        assert not client.send(exchange)
        assert list(exchange.input_requests) == ["resolution"]
        exchange.answer({"resolution": accept(resolution="Duplicate"), **JUNK})
        assert not client.send(exchange)  # now it asks for the original
        assert list(exchange.input_requests) == ["duplicate_of"]
        assert set(opened_state(exchange, "update_work_item", arguments).answers) == {"resolution"}
        assert len(exchange.request_state or "") < 2048


def test_a_state_only_retry_carries_no_answers_it_was_not_asked_for() -> None:
    app = create_app(make_config(shed_every_units=1000))
    arguments = {"units": 5000}
    with MrtrClient.for_app(app) as client:
        exchange = client.exchange("tools/call", {"name": "crunch", "arguments": arguments})
        assert not client.send(exchange)  # shed after 1,000 units: state, no questions
        exchange.input_responses = dict(JUNK)
        assert not client.send(exchange)
        assert opened_state(exchange, "crunch", arguments).answers == {}


def test_the_server_never_issues_a_state_it_would_refuse() -> None:
    limit = 600
    app = create_app(make_config(max_request_state_bytes=limit))
    arguments = {"workItemId": 7, "fields": {"System.State": "Resolved"}}
    long_answer = accept(resolution="Duplicate", note="x" * 2 * limit)
    with MrtrClient.for_app(app, handlers=user_answers()) as client:
        params = {"name": "update_work_item", "arguments": arguments}
        exchange = client.exchange("tools/call", params)
        client.send(exchange)
        exchange.answer({"resolution": long_answer})
        with pytest.raises(McpError) as refused:
            client.send(exchange)
    assert refused.value.code == INVALID_PARAMS
    assert "outgrew" in refused.value.message


def test_the_development_keys_serve_no_peer_beyond_this_machine() -> None:
    body = call_body("get_weather", WEATHER)
    sent = headers("tools/call", "get_weather")
    public = ServerConfig(state_keys=(StateKey("dev", DEV_KEY),), jwt_secret=DEV_JWT_SECRET)
    with TestClient(create_app(public), base_url=LOCAL, client=("203.0.113.5", 4000)) as far:
        refused = far.post("/mcp", json=body, headers=sent)
    assert refused.status_code == 403
    assert "MRTR_STATE_KEYS and MRTR_JWT_SECRET" in refused.json()["error"]["message"]
    with TestClient(create_app(public), base_url=LOCAL, client=("127.0.0.1", 4000)) as near:
        assert near.post("/mcp", json=body, headers=sent).status_code == 200
    allowed = dataclasses.replace(public, allow_development_keys=True)
    with TestClient(create_app(allowed), base_url=LOCAL, client=("203.0.113.5", 4000)) as far:
        assert far.post("/mcp", json=body, headers=sent).status_code == 200


def test_metrics_ask_for_their_token_when_one_is_set() -> None:
    app = create_app(make_config(metrics_token="scrape-me"))
    with TestClient(app, base_url=LOCAL) as http:
        assert http.get("/metrics").status_code == 401
        wrong = http.get("/metrics", headers={"Authorization": "Bearer guess"})
        assert wrong.status_code == 401
        right = http.get("/metrics", headers={"Authorization": "Bearer scrape-me"})
        assert right.status_code == 200 and "mcp_requests_total" in right.text
        # The replica's memory, by which a measurement from outside weighs a held call.
        assert "\nprocess_resident_memory_bytes " in right.text
        assert http.get("/healthz").status_code == 200  # a load balancer needs no token

"""Per-principal limits: held legacy calls and requests per second, each a clear 429."""

from __future__ import annotations

import contextlib
import itertools
import json
import os

import httpx
import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.harness.process import ServerProcess
from server.transport.auth import mint_token
from tests.server.conftest import JWT_SECRET, KEY_A, LEGACY_INITIALIZE, make_config, state_keys_env
from tests.server.probes import metric
from tests.server.tasks_fixtures import RpcFailed, Wire, redis_server, running_replicas, token
from tests.server.test_bad_input import call_body, headers

ENV = {**os.environ, "MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}
LIMIT = 2
INIT = LEGACY_INITIALIZE


def weather(rid: int) -> dict[str, object]:
    params = {"name": "get_weather", "arguments": {"location": "Oslo"}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


@pytest.mark.integration
def test_a_principal_holds_at_most_its_limit_of_legacy_calls() -> None:
    replica = ServerProcess(args=["--max-held-calls-per-principal", str(LIMIT)], env=ENV).start()
    try:
        with httpx.Client(timeout=15) as http, contextlib.ExitStack() as held:
            alice = {"Authorization": f"Bearer {mint_token('alice', JWT_SECRET, ttl_s=60)}"}
            bob = {"Authorization": f"Bearer {mint_token('bob', JWT_SECRET, ttl_s=60)}"}

            def session(auth: dict[str, str]) -> dict[str, str]:
                opened = http.post(replica.url, json=INIT, headers=auth)
                return {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"]}

            on_alice = session(alice)
            for rid in range(LIMIT):  # each waits for an answer that never comes
                stream = held.enter_context(
                    http.stream("POST", replica.url, json=weather(rid + 2), headers=on_alice)
                )
                assert stream.headers["content-type"].startswith("text/event-stream")
            over = http.post(replica.url, json=weather(9), headers=on_alice)
            assert over.status_code == 429
            assert "limit 2" in over.json()["error"]["message"]
            refused = 'mcp_stored_refusals_total{cap="per_principal",store="held_calls"}'
            assert metric(replica.base_url, refused) == 1
            with http.stream("POST", replica.url, json=weather(10), headers=session(bob)) as other:
                assert other.headers["content-type"].startswith("text/event-stream")
    finally:
        replica.stop()


def test_requests_beyond_a_principals_rate_get_429_with_retry_after() -> None:
    app = create_app(make_config(requests_per_s_per_principal=5))
    body = call_body("get_weather", {"location": "Oslo"})
    sent = headers("tools/call", "get_weather")
    with TestClient(app, base_url="http://127.0.0.1") as http:
        replies = [http.post("/mcp", json=body, headers=sent) for _ in range(30)]
        statuses = [r.status_code for r in replies]
        assert statuses[:10] == [200] * 10  # the burst
        limited = [r for r in replies if r.status_code == 429]
        assert limited and int(limited[0].headers["retry-after"]) >= 1
        assert "Too many requests" in json.loads(limited[0].text)["error"]["message"]
        token = mint_token("carol", JWT_SECRET, ttl_s=60)
        own = http.post("/mcp", json=body, headers={**sent, "Authorization": f"Bearer {token}"})
        assert own.status_code == 200  # another principal has its own bucket


def bearer(principal: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint_token(principal, JWT_SECRET, ttl_s=60)}"}


@pytest.mark.integration
def test_a_principal_opens_at_most_its_limit_of_sessions_across_replicas() -> None:
    args = ["--max-sessions-per-principal", str(LIMIT)]
    with redis_server() as redis, running_replicas(2, *args, "--legacy-store", redis.url) as two:
        urls = itertools.cycle([r.url for r in two])
        with httpx.Client(timeout=15) as http:
            opened = []
            for _ in range(LIMIT):  # one on each replica: the count is the store's
                reply = http.post(next(urls), json=INIT, headers=bearer("alice"))
                assert reply.status_code == 200
                opened.append(reply.headers["mcp-session-id"])
            over = http.post(next(urls), json=INIT, headers=bearer("alice"))
            assert over.status_code == 429
            assert over.json()["error"]["code"] == -32029
            assert f"limit {LIMIT}" in over.json()["error"]["message"]
            assert http.post(next(urls), json=INIT, headers=bearer("bob")).status_code == 200
            ended = http.request(
                "DELETE",
                next(urls),
                headers={
                    **bearer("alice"),
                    "Mcp-Session-Id": opened[0],
                    "MCP-Protocol-Version": "2025-11-25",
                },
            )
            assert ended.status_code == 204
            assert http.post(next(urls), json=INIT, headers=bearer("alice")).status_code == 200


@pytest.mark.integration
def test_a_principal_keeps_at_most_its_limit_of_tasks_across_replicas() -> None:
    args = ["--max-tasks-per-principal", str(LIMIT)]
    with redis_server() as redis, running_replicas(2, *args, "--task-store", redis.url) as two:
        alice = Wire([r.url for r in two], token=token("alice"))
        task = {"name": "echo", "task": {"ttl": 60000}}
        created = [alice("tools/call", task)["task"]["taskId"] for _ in range(LIMIT)]
        assert len(set(created)) == LIMIT
        with pytest.raises(RpcFailed) as over:
            alice("tools/call", task)
        assert (over.value.code, over.value.http_status) == (-32029, 429)
        assert f"limit {LIMIT}" in over.value.message
        listed = alice("tasks/list", {})["tasks"]
        assert sorted(t["taskId"] for t in listed) == sorted(created)  # the refused one is not
        bob = Wire([r.url for r in two], token=token("bob"))
        assert bob("tools/call", task)["task"]["status"] in ("working", "input_required")


def test_the_session_limit_holds_in_a_replica_without_a_shared_store() -> None:
    app = create_app(make_config(max_sessions_per_principal=LIMIT))
    with TestClient(app, base_url="http://127.0.0.1") as http:
        opened = [
            http.post("/mcp", json=INIT, headers=bearer("alice")).headers["mcp-session-id"]
            for _ in range(LIMIT)
        ]
        over = http.post("/mcp", json=INIT, headers=bearer("alice"))
        assert over.status_code == 429 and over.json()["error"]["data"] == {"limit": LIMIT}
        legacy = {**bearer("alice"), "MCP-Protocol-Version": "2025-11-25"}
        ended = http.delete("/mcp", headers={**legacy, "Mcp-Session-Id": opened[0]})
        assert ended.status_code == 204
        assert http.post("/mcp", json=INIT, headers=bearer("alice")).status_code == 200
        assert http.post("/mcp", json=INIT, headers=bearer("bob")).status_code == 200

"""Legacy resource subscriptions are capped: URI length, count per session, bytes per principal.

Each cap refuses the caller over it with a JSON-RPC error naming the cap, counts the refusal
in `mcp_stored_refusals`, and serves a caller under it. With the Redis legacy
store a subscription is a member of the session's own set: the session itself is never
rewritten, so its cost does not grow with what the session already subscribes to.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from server.app import create_app
from server.protocol.jsonrpc import INVALID_PARAMS, TOO_MANY_REQUESTS
from server.transport.auth import mint_token
from tests.server.conftest import JWT_SECRET, LEGACY_INITIALIZE, make_config
from tests.server.tasks_fixtures import redis_server

LOCAL = "http://127.0.0.1"
CAPS = {
    "max_subscription_uri_bytes": 64,
    "max_subscriptions_per_session": 3,
    "max_subscription_bytes_per_principal": 200,
}


def open_session(http: TestClient, principal: str) -> dict[str, str]:
    """A legacy session of `principal`: the headers of its later requests."""
    auth = {"Authorization": "Bearer " + mint_token(principal, JWT_SECRET)}
    response = http.post("/mcp", json=LEGACY_INITIALIZE, headers=auth)
    assert response.status_code == 200
    return {**auth, "Mcp-Session-Id": response.headers["mcp-session-id"]}


def subscribe(http: TestClient, session: dict[str, str], uri: str, *, method: str = "") -> Any:
    body = {"jsonrpc": "2.0", "id": 3, "method": method or "resources/subscribe"}
    body["params"] = {"uri": uri}
    return http.post("/mcp", json=body, headers={**session, "MCP-Protocol-Version": "2025-11-25"})


def refused(http: TestClient, cap: str) -> float:
    """How many things /metrics counts as refused at the legacy store's `cap`."""
    start = f'mcp_stored_refusals_total{{cap="{cap}",store="legacy"}} '
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(start):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def uri(n: int, size: int = 40) -> str:
    """A resource URI of exactly `size` bytes, distinct for each `n`."""
    head = f"vault://{n}/"
    return head + "x" * (size - len(head))


@pytest.fixture(params=["memory", "redis"])
def http(request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """A replica with small subscription caps, on each legacy store."""
    if request.param == "memory":
        with TestClient(create_app(make_config(**CAPS)), base_url=LOCAL) as client:
            yield client
        return
    with redis_server() as server:
        config = make_config(legacy_store=server.url, **CAPS)
        with TestClient(create_app(config), base_url=LOCAL) as client:
            yield client


def test_a_uri_over_its_cap_is_refused_and_one_at_it_served(http: TestClient) -> None:
    session = open_session(http, "alice")
    assert subscribe(http, session, uri(1, 64)).json()["result"] == {}
    reply = subscribe(http, session, uri(2, 65))
    assert reply.status_code == 413
    error = reply.json()["error"]
    assert error["code"] == INVALID_PARAMS and error["data"] == {
        "limit": 64,
        "cap": "subscription_uri_bytes",
    }
    assert "65 bytes" in error["message"]
    assert refused(http, "subscription_uri_bytes") == 1


def test_a_session_subscribes_to_at_most_its_cap(http: TestClient) -> None:
    session = open_session(http, "alice")
    for n in range(3):
        assert subscribe(http, session, uri(n)).json()["result"] == {}
    # The same URI again is kept once and costs nothing.
    assert subscribe(http, session, uri(0)).json()["result"] == {}
    reply = subscribe(http, session, uri(3))
    assert reply.status_code == 429
    error = reply.json()["error"]
    assert (
        error["code"] == TOO_MANY_REQUESTS and error["data"]["cap"] == "subscriptions_per_session"
    )
    assert "unsubscribe" in error["message"]
    assert refused(http, "subscriptions_per_session") == 1
    # Room made by unsubscribing is room to subscribe again.
    subscribe(http, session, uri(0), method="resources/unsubscribe")
    assert subscribe(http, session, uri(3)).json()["result"] == {}


def test_a_principal_keeps_at_most_its_bytes_across_sessions(http: TestClient) -> None:
    first, second = open_session(http, "mallory"), open_session(http, "mallory")
    for n in range(3):
        assert subscribe(http, first, uri(n)).json()["result"] == {}
    assert subscribe(http, second, uri(10)).json()["result"] == {}
    assert subscribe(http, second, uri(11)).json()["result"] == {}  # 200 of 200 bytes
    reply = subscribe(http, second, uri(12))  # 240
    assert reply.status_code == 413
    error = reply.json()["error"]
    assert error["code"] == INVALID_PARAMS and error["data"] == {
        "limit": 200,
        "cap": "subscription_bytes_per_principal",
    }
    assert "240 bytes" in error["message"]
    assert refused(http, "subscription_bytes_per_principal") == 1
    # Another principal is served; ending a session frees what it held.
    assert subscribe(http, open_session(http, "bob"), uri(12)).json()["result"] == {}
    assert http.delete("/mcp", headers={**first, "MCP-Protocol-Version": "2025-11-25"})
    assert subscribe(http, second, uri(12)).json()["result"] == {}


def test_subscriptions_are_kept_and_dropped(http: TestClient) -> None:
    session = open_session(http, "alice")
    subscribe(http, session, "vault://secret")
    store = http.app.state.server.legacy.store  # type: ignore[attr-defined]
    session_id = session["Mcp-Session-Id"]
    assert http.portal.call(store.subscriptions, session_id) == ["vault://secret"]
    subscribe(http, session, "vault://secret", method="resources/unsubscribe")
    assert http.portal.call(store.subscriptions, session_id) == []


def test_a_redis_subscription_is_a_set_member_not_a_rewritten_session() -> None:
    with redis_server() as server:
        config = make_config(legacy_store=server.url, max_subscriptions_per_session=0)
        direct = redis.Redis.from_url(server.url)
        with TestClient(create_app(config), base_url=LOCAL) as http:
            session = open_session(http, "alice")
            session_key = f"mrtr:legacy:session:{session['Mcp-Session-Id']}"
            subscriptions_key = f"mrtr:legacy:subscriptions:{session['Mcp-Session-Id']}"
            before = direct.get(session_key)
            for n in range(50):
                assert subscribe(http, session, uri(n, 1000)).json()["result"] == {}
            # The session is as it was: 50 KB of subscriptions live in their own set.
            assert direct.get(session_key) == before
            assert direct.scard(subscriptions_key) == 50
            assert 0 < direct.pttl(subscriptions_key) <= direct.pttl(session_key) + 1000
            assert http.delete("/mcp", headers={**session, "MCP-Protocol-Version": "2025-11-25"})
            assert not direct.exists(subscriptions_key)
        direct.close()

"""What the legacy store keeps is bounded however many principals open sessions.

The in-process store counts its sessions (as JSON) and their subscribed URIs against
`--max-legacy-store-bytes`: when they fill it, a new session or subscription is refused as
"legacy store full" (507) and counted in `legacy_store_errors`, while the sessions already
open are served. In Redis, a principal's index of sessions expires with the last session
it used (as does the sum of its subscribed bytes), so a principal that never comes back
leaves nothing behind.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from starlette.testclient import TestClient

from loadtest.harness.redis_server import RedisServer
from server.app import create_app
from server.transport.auth import mint_token
from tests.server.conftest import JWT_SECRET, LEGACY_INITIALIZE, make_config
from tests.server.tasks_fixtures import redis_server
from tests.server.test_subscription_caps import LOCAL, open_session, subscribe, uri


def store_errors(http: TestClient, operation: str) -> float:
    start = f'legacy_store_errors_total{{operation="{operation}"}} '
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(start):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_many_principals_fill_the_memory_store_cap_not_the_replica() -> None:
    # A session of the test client is about 200 bytes as JSON and 1 KiB more for its
    # objects: room for three.
    config = make_config(max_legacy_store_bytes=3900)
    with TestClient(create_app(config), base_url=LOCAL) as http:
        opened = [open_session(http, f"user-{n}") for n in range(3)]
        store = http.app.state.server.legacy.store  # type: ignore[attr-defined]
        assert 3 * 1024 < store.stored_bytes <= 3900
        refused = http.post(
            "/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            },
        )
        assert refused.status_code == 507
        assert refused.json()["error"]["message"] == "legacy store full during create_session"
        assert store_errors(http, "create_session") == 1
        # The sessions already open go on; a subscription that does not fit is refused too.
        reply = subscribe(http, opened[0], uri(1, 500))
        assert reply.status_code == 507
        assert store_errors(http, "subscribe_resource") == 1
        assert subscribe(http, opened[0], uri(1, 20)).json()["result"] == {}
        # An ended session gives its room back.
        before = store.stored_bytes
        ended = http.delete("/mcp", headers={**opened[1], "MCP-Protocol-Version": "2025-11-25"})
        assert ended.status_code == 204 and store.stored_bytes < before
        assert open_session(http, "user-9")


@pytest.mark.integration
def test_a_principals_index_of_sessions_expires_with_its_last_used_session() -> None:
    with redis_server() as server:
        config = make_config(legacy_store=server.url, legacy_session_ttl_s=1.0)
        direct = redis.Redis.from_url(server.url)
        with TestClient(create_app(config), base_url=LOCAL) as http:
            session = open_session(http, "drifter")
            assert subscribe(http, session, uri(1)).json()["result"] == {}
            index = "mrtr:legacy:sessions-of:drifter"
            subscribed = "mrtr:legacy:subscribed-bytes-of:drifter"
            assert 0 < direct.pttl(index) <= 1000 and 0 < direct.pttl(subscribed) <= 1000
            time.sleep(0.6)
            # Using the session renews the index and the principal's bytes with it.
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            headers = {**session, "MCP-Protocol-Version": "2025-11-25"}
            assert http.post("/mcp", json=ping, headers=headers).status_code == 200
            assert direct.pttl(index) > 600 and direct.pttl(subscribed) > 600
            time.sleep(1.1)
            assert not direct.exists(index) and not direct.exists(subscribed)
        direct.close()


def test_the_harness_redis_keeps_at_most_its_maxmemory_without_evicting() -> None:
    for server in (RedisServer(), RedisServer(data_dir=Path("/nonexistent"))):
        command = server.command()
        assert command[command.index("--maxmemory") + 1] == str(256 * 1024 * 1024)
        assert command[command.index("--maxmemory-policy") + 1] == "noeviction"


@pytest.mark.integration
def test_many_principals_fill_a_redis_legacy_store_at_its_maxmemory() -> None:
    with redis_server() as server:
        direct = redis.Redis.from_url(server.url)
        used = int(direct.info("memory")["used_memory"])
        direct.config_set("maxmemory", used + 400_000)
        capabilities = {"elicitation": {}, "experimental": {"padding": "x" * 15_000}}
        initialize = {**LEGACY_INITIALIZE, "params": {**LEGACY_INITIALIZE["params"]}}
        initialize["params"]["capabilities"] = capabilities
        config = make_config(legacy_store=server.url)
        with TestClient(create_app(config), base_url=LOCAL) as http:
            codes = []
            for n in range(60):
                auth = {"Authorization": "Bearer " + mint_token(f"user-{n}", JWT_SECRET)}
                reply = http.post("/mcp", json=initialize, headers=auth)
                codes.append(reply.status_code)
                if reply.status_code == 507:
                    assert reply.json()["error"]["message"] == (
                        "legacy store full during create_session"
                    )
            assert codes[0] == 200 and codes[-1] == 507 and set(codes) == {200, 507}
            assert store_errors(http, "create_session") == codes.count(507)
        direct.close()

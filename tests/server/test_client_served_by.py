"""The reference MRTR client records which replica served each round, when a load balancer
in front of the replicas names it (the lab's HAProxy does, in X-Served-By)."""

from __future__ import annotations

import asyncio
import itertools

import httpx
from starlette.testclient import TestClient

from server.app import create_app
from server.client import SERVED_BY_HEADER, AsyncMrtrClient, Handlers, MrtrClient, accept
from server.config import ServerConfig, StateKey

KEYS = (StateKey("k1", bytes(range(32))),)
SECRET = "a test secret, not the development one"
USER = Handlers(elicit=lambda params: accept(resolution="Duplicate", duplicateOfId=4301))
BUG = {"workItemId": 4522, "fields": {"System.State": "Resolved"}}


class NamingBalancer(httpx.BaseTransport):
    """Round-robin over in-process replicas, naming the one that answered, as HAProxy does."""

    def __init__(self, names: list[str], header: bool = True) -> None:
        self.replicas = {
            name: TestClient(
                create_app(ServerConfig(replica_id=name, state_keys=KEYS, jwt_secret=SECRET))
            )
            for name in names
        }
        self.turns = itertools.cycle(names)
        self.header = header

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        name = next(self.turns)
        answer = self.replicas[name].post(
            "/mcp", content=request.read(), headers=dict(request.headers)
        )
        headers = dict(answer.headers)
        if self.header:
            headers[SERVED_BY_HEADER] = name
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)


class AsyncNamingBalancer(httpx.AsyncBaseTransport):
    def __init__(self, names: list[str]) -> None:
        self.balancer = NamingBalancer(names)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        return self.balancer.handle_request(request)


def test_each_round_records_the_replica_the_balancer_named() -> None:
    with MrtrClient(
        "http://127.0.0.1/mcp", transport=NamingBalancer(["A", "B"]), handlers=USER
    ) as client:
        bug = client.call_tool("update_work_item", BUG)
    assert bug.text == "Bug #4522 resolved as Duplicate of Bug #4301"
    assert [r.served_by for r in bug.rounds] == ["A", "B", "A"]


def test_the_async_client_records_it_too() -> None:
    async def call() -> list[str | None]:
        transport = AsyncNamingBalancer(["A", "B", "C"])
        async with AsyncMrtrClient(
            "http://127.0.0.1/mcp", transport=transport, handlers=USER
        ) as client:
            bug = await client.call_tool("update_work_item", BUG)
        return [r.served_by for r in bug.rounds]

    assert asyncio.run(call()) == ["A", "B", "C"]


def test_a_round_nobody_named_records_none() -> None:
    transport = NamingBalancer(["A"], header=False)
    with MrtrClient("http://127.0.0.1/mcp", transport=transport, handlers=USER) as client:
        bug = client.call_tool("update_work_item", BUG)
    assert len(bug.rounds) == 3 and {r.served_by for r in bug.rounds} == {None}

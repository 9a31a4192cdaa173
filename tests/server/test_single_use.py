"""A tool with side effects runs each confirmed round once, however often it is sent.

`provision_vm` creates a machine billed by the hour. Its confirmed round carries a sealed
requestState; the first copy to arrive records the state as used (in the task store every
replica shares) and creates the task, every other copy is refused. Retry-safe tools are
unchanged.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from server.app import create_app
from server.client import Exchange, accept
from server.core.store import StoreFull
from server.protocol.jsonrpc import INVALID_PARAMS
from server.tasks.store import CLAIM_OVERHEAD_BYTES, InProcessTaskStore
from tests.server.conftest import make_config
from tests.server.tasks_fixtures import SEED_CAPABILITIES, redis_server, running_replicas, token

COPIES = 200
PROVISION = {
    "name": "provision_vm",
    "arguments": {"name": "web-1", "seconds": 0.1},
    "task": {"ttl": 60_000},
}
YES = {"confirm_provision": accept(confirm=True)}


def request(
    params: dict[str, Any], principal: str, method: str = "tools/call"
) -> tuple[dict[str, str], dict[str, Any]]:
    """The headers and body of one message from `principal`, as the reference client sends it."""
    return Exchange(method, params, SEED_CAPABILITIES, token=token(principal)).next_request()


def copies(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The same round sent `COPIES` times, as a retry loop gone wild would (new ids)."""
    sent = []
    for rid in range(COPIES):
        one = copy.deepcopy(body)
        one["id"] = 1000 + rid
        sent.append(one)
    return sent


def outcomes(replies: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the results that are tasks, the errors)."""
    tasks = [r["result"] for r in replies if r.get("result", {}).get("resultType") == "task"]
    return tasks, [r["error"] for r in replies if "error" in r]


def assert_one_task(replies: list[dict[str, Any]]) -> None:
    tasks, errors = outcomes(replies)
    assert len(tasks) == 1 and len(errors) == COPIES - 1
    assert {(e["code"], e["data"]["reason"]) for e in errors} == {(INVALID_PARAMS, "used")}
    assert "already used" in errors[0]["message"]


def test_two_hundred_copies_of_a_confirmed_round_create_one_task() -> None:
    # One principal sends every copy at once: the rate limit would refuse most of them
    # before the single-use check this test is about.
    app = create_app(make_config(requests_per_s_per_principal=0))

    async def attack() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            headers, body = request(PROVISION, "dave")
            first = (await http.post("/mcp", json=body, headers=headers)).json()["result"]
            confirmed = {**PROVISION, "inputResponses": YES, "requestState": first["requestState"]}
            headers, body = request(confirmed, "dave")
            posts = [http.post("/mcp", json=one, headers=headers) for one in copies(body)]
            replies = [r.json() for r in await asyncio.gather(*posts)]
            headers, body = request({}, "dave", "tasks/list")
            listed = (await http.post("/mcp", json=body, headers=headers)).json()
            return replies, listed["result"]["tasks"]

    replies, listed = asyncio.run(attack())
    assert_one_task(replies)
    assert [t["taskId"] for t in listed] == [outcomes(replies)[0][0]["task"]["taskId"]]


def test_answers_sent_without_the_state_are_not_taken() -> None:
    app = create_app(make_config())
    transport = httpx.ASGITransport(app=app)

    async def skip_the_question() -> dict[str, Any]:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            headers, body = request({**PROVISION, "inputResponses": YES}, "erin")
            return (await http.post("/mcp", json=body, headers=headers)).json()["result"]

    result = asyncio.run(skip_the_question())
    assert result["resultType"] == "input_required" and result["requestState"]
    assert list(result["inputRequests"]) == ["confirm_provision"]


def test_retry_safe_tools_take_a_state_again() -> None:
    app = create_app(make_config())
    arguments = {"workItemId": 7, "fields": {"System.State": "Resolved"}}
    params = {"name": "update_work_item", "arguments": arguments}

    async def twice() -> list[dict[str, Any]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answered = {**params, "inputResponses": {"resolution": accept(resolution="Duplicate")}}
            headers, body = request(answered, "frank")
            state = (await http.post("/mcp", json=body, headers=headers)).json()["result"]
            retry = {**params, "requestState": state["requestState"]}
            retry["inputResponses"] = {"duplicate_of": accept(duplicateOfId=3)}
            headers, body = request(retry, "frank")
            return [(await http.post("/mcp", json=body, headers=headers)).json() for _ in range(2)]

    for reply in asyncio.run(twice()):
        assert reply["result"]["content"][0]["text"] == "Bug #7 resolved as Duplicate of Bug #3"


@pytest.mark.integration
def test_copies_spread_over_two_replicas_sharing_redis_create_one_task() -> None:
    # The rate limit is lifted for the same reason as above: one principal, every copy at once.
    with (
        redis_server() as redis,
        running_replicas(2, "--task-store", redis.url, "--rate-per-principal", "0") as two,
    ):
        headers, body = request(PROVISION, "grace")
        first = httpx.post(two[0].url, json=body, headers=headers, timeout=10).json()["result"]
        confirmed = {**PROVISION, "inputResponses": YES, "requestState": first["requestState"]}
        headers, body = request(confirmed, "grace")
        urls = itertools.cycle([r.url for r in two])
        with httpx.Client(timeout=30) as http, ThreadPoolExecutor(32) as pool:
            sent = [(next(urls), one) for one in copies(body)]
            replies = list(pool.map(lambda s: http.post(s[0], json=s[1], headers=headers), sent))
        assert_one_task([r.json() for r in replies])


def test_single_use_claims_fill_the_in_process_store_cap_not_the_memory() -> None:
    # Each claim takes its key's bytes and its objects' of the store's cap (46 + 128 here),
    # as a task takes its JSON's: room for two.
    store = InProcessTaskStore(max_bytes=400)

    async def claims() -> list[bool | str]:
        kept: list[bool | str] = []
        for n in range(3):
            try:
                kept.append(await store.claim_once(f"state:{n:040d}", 0.05))
            except StoreFull as full:
                kept.append(str(full))
        assert not await store.claim_once("state:" + "0" * 40, 0.05)  # claimed: refused
        await asyncio.sleep(0.06)
        store._next_claim_sweep = 0.0  # the next claim sweeps the expired ones first
        kept.append(await store.claim_once("state:" + "9" * 40, 0.05))
        return kept

    assert asyncio.run(claims()) == [True, True, "task store full during once", True]
    assert store.stored_bytes == 46 + CLAIM_OVERHEAD_BYTES

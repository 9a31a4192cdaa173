"""A cluster the lab builds runs each confirmed round of a tool with side effects once.

Two replicas or more share one task store whatever the mix, so the single-use record of a
confirmed `provision_vm` round is one for the whole cluster: copies of the round sent to
every replica at once create one task.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import Cluster
from server.client import Exchange
from tests.server.tasks_fixtures import SEED_CAPABILITIES
from tests.server.test_single_use import COPIES, PROVISION, YES, copies, outcomes

NO_TASK_TOOLS = {"get_weather": 1.0}


def test_several_replicas_share_a_task_store_whatever_the_mix() -> None:
    assert Cluster(LoadTestConfig(replicas=2, tool_mix=NO_TASK_TOOLS)).shared_task_store
    assert not Cluster(LoadTestConfig(replicas=1, tool_mix=NO_TASK_TOOLS)).shared_task_store
    assert Cluster(LoadTestConfig(replicas=1, tool_mix={"provision_vm": 1.0})).shared_task_store


@pytest.mark.integration
def test_copies_of_a_confirmed_round_on_a_two_replica_cluster_create_one_task() -> None:
    config = LoadTestConfig(replicas=2, tool_mix=NO_TASK_TOOLS)
    with Cluster(config) as cluster:
        token = cluster.user_headers("grace")["Authorization"].removeprefix("Bearer ")

        def request(params: dict) -> tuple[dict[str, str], dict]:  # type: ignore[type-arg]
            return Exchange("tools/call", params, SEED_CAPABILITIES, token=token).next_request()

        urls = [replica.url for replica in cluster.replicas.values()]
        headers, body = request(PROVISION)
        first = httpx.post(urls[0], json=body, headers=headers, timeout=10).json()["result"]
        confirmed = {**PROVISION, "inputResponses": YES, "requestState": first["requestState"]}
        headers, body = request(confirmed)
        # Every copy at once, alternately to each replica, as retries spread by a balancer.
        spread = zip(itertools.cycle(urls), copies(body), strict=False)
        with httpx.Client(timeout=30) as http, ThreadPoolExecutor(32) as pool:
            replies = list(pool.map(lambda s: http.post(s[0], json=s[1], headers=headers), spread))
    tasks, errors = outcomes([r.json() for r in replies])
    assert len(tasks) == 1 and len(errors) == COPIES - 1
    assert {e["data"]["reason"] for e in errors} == {"used"}

"""Notebook 06's replicas of a server written with the official Python SDK
(`lessons.sdk_replicas`): a call's rounds go to the replicas in turn, a state sealed with
one replica's own key is refused by the other, and every replica is stopped when the
block ends, also when it ends in an error."""

from __future__ import annotations

import httpx
import pytest

from lessons.sdk_replicas import round_robin_call, sdk_replicas

pytestmark = pytest.mark.integration


class Stop(Exception):
    """An error raised inside the block, as a failing cell would."""


def test_rounds_alternate_and_a_key_each_refuses_the_other_replicas_state() -> None:
    own = {"SDK_STATE_KEY": "own"}
    shared = {"SDK_STATE_KEY": "one secret of at least thirty-two bytes"}
    seen: list[str] = []
    with pytest.raises(Stop), sdk_replicas([own, own, shared, shared]) as urls:
        seen = urls
        apart, together = round_robin_call(urls[:2], 1), round_robin_call(urls[2:], 0)
        raise Stop
    assert [r["replica"] for r in apart["rounds"]] == ["B", "A", "B"]
    assert not apart["completed"] and "-32602" in apart["said"]
    assert apart["rounds"][-1]["state sealed by"] == "A"
    assert together["completed"] and together["said"].startswith("sent 5000")
    for url in seen:  # stopped after the error: nothing listens any more
        with pytest.raises(httpx.HTTPError):
            httpx.get(url, timeout=1.0)

"""Reading a running replica from a test: its health, its metrics, and waiting for a state."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx


def health(base_url: str) -> dict[str, Any]:
    """The replica's /healthz body."""
    return httpx.get(f"{base_url}/healthz", timeout=5.0).json()


def metric(base_url: str, line_start: str) -> float:
    """The value of the first /metrics sample whose line starts with `line_start` (else 0)."""
    for line in httpx.get(f"{base_url}/metrics", timeout=5.0).text.splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def wait_for(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll `condition` until it holds; TimeoutError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.02)


def holds_nothing(base_url: str) -> bool:
    """Whether the replica holds no legacy stream and no call waiting for an answer."""
    now = health(base_url)
    return (
        now["open_streams"] == 0 and now["waiting_calls"] == 0 and now["waiting_memory_bytes"] == 0
    )

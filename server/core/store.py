"""What the two shared stores (tasks, legacy answers) have in common: how they fail.

Every call to a store shared between replicas is bounded by a timeout, and a failure is
one exception, `StoreUnavailable`, naming the store and the operation. Its message is
safe to show a client: the cause (which may name a host, a port or a script) stays in
`__cause__` and in the server's log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class StoreUnavailable(Exception):
    """A shared store failed or did not answer in time: the operation failed cleanly."""

    def __init__(self, store: str, operation: str) -> None:
        super().__init__(f"{store} store unavailable during {operation}")
        self.store = store
        self.operation = operation


async def bounded(
    store: str,
    operation: str,
    command: Awaitable[T],
    *,
    timeout_s: float,
    errors: tuple[type[BaseException], ...],
) -> T:
    """Await one store operation within `timeout_s`; `errors` become `StoreUnavailable`."""
    caught: tuple[type[BaseException], ...] = (*errors, TimeoutError)
    try:
        async with asyncio.timeout(timeout_s):
            return await command
    except caught as exc:
        raise StoreUnavailable(store, operation) from exc

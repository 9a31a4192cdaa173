"""What the two shared stores (tasks, legacy answers) have in common: how they fail.

Every call to a store shared between replicas is bounded by a timeout, and a failure is
one exception, `StoreUnavailable`, naming the store and the operation; a store that
refused a write for want of room raises its kind, `StoreFull`, so the caller hears that
the store is full rather than down. Their messages are safe to show a client: the cause
(which may name a host, a port or a script) stays in `__cause__` and in the server's log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Protocol, TypeVar

from server.protocol.jsonrpc import INTERNAL_ERROR, RpcError

T = TypeVar("T")


class StoreUnavailable(Exception):
    """A shared store failed or did not answer in time: the operation failed cleanly."""

    def __init__(self, store: str, operation: str) -> None:
        super().__init__(f"{store} store unavailable during {operation}")
        self.store = store
        self.operation = operation


class StoreFull(StoreUnavailable):
    """A shared store refused a write for want of room: Redis at its `maxmemory` under
    `noeviction`, or an in-process store at its size cap. Nothing was written."""

    def __init__(self, store: str, operation: str) -> None:
        Exception.__init__(self, f"{store} store full during {operation}")
        self.store = store
        self.operation = operation


class SingleUse(Protocol):
    """A record, shared by every replica, of things that may be done once: a key is
    claimed by the first to ask, for as long as the thing it names could come back."""

    async def claim_once(self, key: str, ttl_s: float) -> bool:
        """Claim `key` for `ttl_s` seconds: True for the first claim, False for any other.

        Raises `StoreUnavailable` (or `StoreFull`) when the record cannot be read or kept.
        """
        ...


def store_error(exc: StoreUnavailable, prefix: str = "") -> RpcError:
    """The JSON-RPC error for a failed store operation: HTTP 507 when the store is full,
    503 when it failed or did not answer."""
    status = 507 if isinstance(exc, StoreFull) else 503
    return RpcError(INTERNAL_ERROR, f"{prefix}{exc}", http_status=status)


async def bounded(
    store: str,
    operation: str,
    command: Awaitable[T],
    *,
    timeout_s: float,
    errors: tuple[type[BaseException], ...],
    full: tuple[type[BaseException], ...] = (),
) -> T:
    """Await one store operation within `timeout_s`; `errors` become `StoreUnavailable`,
    and those of them in `full` `StoreFull`."""
    caught: tuple[type[BaseException], ...] = (*errors, TimeoutError)
    try:
        async with asyncio.timeout(timeout_s):
            return await command
    except caught as exc:
        if isinstance(exc, full):
            raise StoreFull(store, operation) from exc
        raise StoreUnavailable(store, operation) from exc

"""Which legacy store a replica uses: the one its configuration names, memory or Redis.

Kept apart from both stores, which it chooses between: the Redis store is built on the
interface in `server.legacy.store`, so the choice cannot live there. Neither module loads
redis-py when imported, so a replica with the memory store starts without it.
"""

from __future__ import annotations

from server.legacy.redis_store import RedisStore
from server.legacy.store import LegacyStore, MemoryStore


def open_store(
    spec: str,
    *,
    replica_id: str,
    session_ttl_s: float,
    answer_timeout_s: float,
    timeout_s: float,
    max_memory_bytes: int = 0,
) -> LegacyStore:
    """The store `spec` names: `memory` (keeping at most `max_memory_bytes`), or a Redis URL."""
    if spec == "memory":
        return MemoryStore(session_ttl_s=session_ttl_s, max_bytes=max_memory_bytes)
    return RedisStore(
        spec,
        replica_id=replica_id,
        session_ttl_s=session_ttl_s,
        answer_timeout_s=answer_timeout_s,
        timeout_s=timeout_s,
    )

"""Which task store a replica uses: the one its configuration names, in process or Redis.

Kept apart from both stores, which it chooses between: the Redis store is built on the
interface in `server.tasks.store`, so the choice cannot live there. Neither module loads
redis-py when imported, so a replica with the in-process store starts without it.
"""

from __future__ import annotations

from server.tasks.redis_store import RedisTaskStore
from server.tasks.store import InProcessTaskStore, TaskStore


def open_task_store(
    spec: str, *, timeout_s: float, max_memory_bytes: int, volatile_ok: bool = False
) -> TaskStore:
    """The store named by configuration: `memory` (holding at most `max_memory_bytes`), or
    a `redis://` URL (bounded by the Redis's own maxmemory; creating tasks only while it is
    durable, unless `volatile_ok`)."""
    if spec == "memory":
        return InProcessTaskStore(max_bytes=max_memory_bytes)
    return RedisTaskStore(spec, timeout_s=timeout_s, volatile_ok=volatile_ok)

"""Which task store a replica uses: the one its configuration names, in process or Redis.

Kept apart from both stores, which it chooses between: the Redis store is built on the
interface in `server.tasks.store`, so the choice cannot live there. Neither module loads
redis-py when imported, so a replica with the in-process store starts without it.
"""

from __future__ import annotations

from server.tasks.redis_store import RedisTaskStore
from server.tasks.store import InProcessTaskStore, TaskStore


def open_task_store(spec: str, *, timeout_s: float) -> TaskStore:
    """The store named by configuration: `memory`, or a `redis://` URL."""
    if spec == "memory":
        return InProcessTaskStore()
    return RedisTaskStore(spec, timeout_s=timeout_s)

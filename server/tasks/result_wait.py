"""The seed's `tasks/result` wait on a working task, which never outlives its caller.

The v1 method blocks until the task needs input or ends, and a seed client calls it to
block: answering at once (as the released extension's `tasks/get` polling does) would turn
every such call into "still working", a change of the seed's contract. So it waits, but a
wait holds a request in flight on the replica (uvicorn's concurrency cap counts it until
it returns, whatever became of its socket), and so three things bound it:

- time: at most `wait_s`, then "still working: poll tasks/get";
- its caller: one principal waits on at most `max_per_principal` tasks at once on a
  replica; beyond that, `tasks/result` answers at once with the task as it stands, the
  polling answer, so one caller cannot fill the replica with waits;
- everyone: all principals together wait on at most `max_total` tasks at once on a
  replica (520 principals of 4 waits each held `/healthz` without it); beyond that, the
  same polling answer, and `on_full` is told. Not an error: a seed client blocking on
  `tasks/result` copes with "still working" as it does with the wait's time running out;
- the client: a wait whose client closed its connection ends within
  `DEPARTURE_CHECK_S`, since nobody would read its answer (without this, 2,100 requests
  whose sockets closed at once held a replica at its cap, `/healthz` included, for 30 s).

Between looks at the client the wait reads the task store once per the task's poll
interval, as a client polling `tasks/get` would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from server.core.call import Call
from server.tasks.store import WORKING, TaskRecord

#: How often a waiting `tasks/result` looks whether its client is still there, seconds.
DEPARTURE_CHECK_S = 0.05


class ResultWaits:
    """The `tasks/result` waits of one replica, counted by principal."""

    def __init__(
        self,
        *,
        wait_s: float,
        max_per_principal: int,
        max_total: int = 0,
        on_full: Callable[[], None] = lambda: None,
    ) -> None:
        self.wait_s = wait_s
        #: 0: no limit.
        self.max_per_principal = max_per_principal
        #: All principals together; 0: no limit.
        self.max_total = max_total
        self.on_full = on_full
        #: Waits running now, by principal (principals with none are not kept).
        self.waiting: dict[str, int] = {}
        #: Waits running now, all principals together.
        self.total = 0

    def full(self, principal: str) -> bool:
        """Whether `principal` already waits on as many tasks as it may, or the replica
        holds as many waits as it may (which `on_full` is told)."""
        cap = self.max_per_principal
        if cap > 0 and self.waiting.get(principal, 0) >= cap:
            return True
        if self.max_total > 0 and self.total >= self.max_total:
            self.on_full()
            return True
        return False

    async def settled(
        self, call: Call, record: TaskRecord, reread: Callable[[], Awaitable[TaskRecord]]
    ) -> TaskRecord:
        """The task once it is no longer working, or as it stands when the wait must end.

        `reread` reads the task again from the store.
        """
        if record.status != WORKING or self.full(call.principal):
            return record
        principal = call.principal
        self.waiting[principal] = self.waiting.get(principal, 0) + 1
        self.total += 1
        try:
            return await self._wait(call, record, reread)
        finally:
            self.total -= 1
            left = self.waiting[principal] - 1
            if left:
                self.waiting[principal] = left
            else:
                del self.waiting[principal]

    async def _wait(
        self, call: Call, record: TaskRecord, reread: Callable[[], Awaitable[TaskRecord]]
    ) -> TaskRecord:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        next_read = loop.time() + record.poll_interval_ms / 1000
        gone = call.disconnected
        while record.status == WORKING:
            now = loop.time()
            if now >= deadline:
                break
            await asyncio.sleep(min(DEPARTURE_CHECK_S, deadline - now, next_read - now))
            if gone is not None and await gone():
                break
            if loop.time() >= next_read:
                record = await reread()
                next_read = loop.time() + record.poll_interval_ms / 1000
        return record

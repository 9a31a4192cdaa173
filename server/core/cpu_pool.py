"""CPU-bound tool work off the event loop: a few worker processes, shared fairly.

A replica serves every request on one thread, its event loop. A tool that computes on
that thread (`quote`'s `cpu_ms`, `crunch`'s hashing) holds every other request, the health
check included, for as long as it computes: four `quote cpu_ms=1000` calls held `/healthz`
for 3 s, and HAProxy, whose check times out after 2 s, marked both replicas down. Here
such work runs elsewhere:

- **in worker processes**, not threads. Measured on the lab's two cores (shared, load 2
  to 3.5), with four `quote cpu_ms=1000` calls running, `/healthz` answered at a median
  of 1.4-1.8 ms (p95 6-15 ms) with the work in two worker processes, 12-26 ms (p95
  28-80 ms) with it in four threads, and after 2.7-8.9 s with it on the loop
  (`docs/hardening.md` has the runs). A thread computing in pure Python holds the
  interpreter's lock but for a switch every 5 ms (hashlib lets go of it only for inputs
  of 2 KiB or more; `crunch` hashes 40 bytes a step), so the loop waits its turn at
  every step of every request; processes leave the loop its own interpreter. The
  workers run at the lowest CPU priority Linux has (SCHED_IDLE; elsewhere nice 10): they
  compute on what the replicas leave, and a replica woken by a request takes its core
  back at once. On a machine busy with serving, CPU-heavy calls wait: serving first.
- **in slices** of about `SLICE_MS` of CPU: a call hands over one slice, awaits it, and
  hands over the next, so the pool's queue interleaves every caller's slices (a
  legitimate call waits for slices, not for someone's whole second), and a call whose
  client left, or that a loaded replica sheds, stops between two slices.
- **within a cap per caller**: one principal runs at most `max_calls_per_principal` calls
  in the pool at once on a replica; the next is refused with HTTP 429, so a caller's
  share of the workers is bounded and the queue is at most one slice per running call.
- **within a cap per replica**: all principals together run at most `max_calls` (HTTP
  429 beyond, and `on_full` is told), so many principals, each within its own cap, cannot
  together queue more than the workers clear in a moment.

Work estimated at `inline_max_ms` or less (a quarter of a millisecond by default) runs on
the loop: a hand-off costs about that much. More does not, however small it looks: one
caller sending `quote cpu_ms=10` 65 times a second, within its rate limit, put
`/healthz`'s median at 389 ms. (The calibration raises the bound on purpose: its `quote`
rounds, 8 ms, measure a replica whose CPU is the loop's.)
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from server.protocol.jsonrpc import too_many_requests

T = TypeVar("T")

#: CPU a call hands to the pool at a time, milliseconds.
SLICE_MS = 25.0
#: How much lower the workers' CPU priority is than the replica's (`nice`).
WORKER_NICENESS = 10
#: How often a worker looks whether its replica is still alive, seconds.
PARENT_CHECK_S = 0.5


def _worker_start(parent_pid: int, modules: tuple[str, ...]) -> None:
    """Set up a worker process: lower priority, the tools' modules, and an end with its replica.

    A worker waits for jobs on a pipe whose writing end it holds itself, so it would
    outlive a replica that was killed; it watches for that and exits. It ignores Ctrl-C
    (SIGINT, sent to the whole process group by a terminal or a notebook's kernel
    manager): its replica ends it, and it no longer prints a KeyboardInterrupt
    traceback of its own over the replica's shutdown.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(WORKER_NICENESS)
    for module in modules:
        importlib.import_module(module)

    def watch_parent() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch_parent, name="parent-watch", daemon=True).start()


def _ready() -> int:
    return os.getpid()


class CpuPool:
    """Where one replica's CPU-bound tool work runs: on the loop when small, else in workers.

    `preload` names the modules whose functions the workers will run (imported as each
    worker starts, rather than by its first call).
    """

    def __init__(
        self,
        *,
        workers: int,
        inline_max_ms: float,
        max_calls_per_principal: int,
        max_calls: int = 0,
        on_full: Callable[[], None] = lambda: None,
        preload: Sequence[str] = (),
    ) -> None:
        self.workers = workers
        self.inline_max_ms = inline_max_ms
        #: 0: no limit.
        self.max_calls_per_principal = max_calls_per_principal
        #: Calls of all principals together; 0: no limit.
        self.max_calls = max_calls
        self.on_full = on_full
        #: Calls in the pool now, all principals together.
        self.total = 0
        self.preload = tuple(preload)
        #: Calls in the pool now, by principal (principals with none are not kept).
        self.running: dict[str, int] = {}
        self._executor: Executor | None = None
        self._starting: asyncio.Future[Executor] | None = None

    @property
    def started(self) -> bool:
        """Whether the worker processes are running (they start with the first call)."""
        return self._executor is not None

    def inline(self, estimate_ms: float) -> bool:
        """Whether work of about `estimate_ms` of CPU runs on the loop itself."""
        return estimate_ms <= self.inline_max_ms

    @contextlib.contextmanager
    def share(self, principal: str) -> Iterator[None]:
        """One call of `principal` in the pool, for the `with` block; 429 beyond its cap or
        the replica's."""
        cap = self.max_calls_per_principal
        held = self.running.get(principal, 0)
        if cap and held >= cap:
            raise too_many_requests(
                f"Too many CPU-heavy calls at once: at most {cap} per caller on this server",
                cap,
            )
        if self.max_calls and self.total >= self.max_calls:
            self.on_full()
            raise too_many_requests(
                f"This server runs as many CPU-heavy calls as it may ({self.max_calls}, all "
                "callers together): try again shortly",
                self.max_calls,
            )
        self.running[principal] = held + 1
        self.total += 1
        try:
            yield
        finally:
            self.total -= 1
            left = self.running[principal] - 1
            if left:
                self.running[principal] = left
            else:
                del self.running[principal]

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)` in a worker process (a module-level function, picklable arguments)."""
        executor = self._executor or await self._started()
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, work, *args)
        except BrokenProcessPool:
            # A worker died (killed, out of memory): the next call gets a fresh pool.
            if self._executor is executor:
                self._executor = None
            raise

    def close(self) -> None:
        """Stop the workers; work not yet started is dropped."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    async def _started(self) -> Executor:
        """The pool, its workers started by a thread: starting a worker (a new interpreter
        importing `preload`) takes a while, and the loop must not wait for it."""
        if self._starting is None:
            self._starting = asyncio.ensure_future(asyncio.to_thread(self._start_workers))
        starting = self._starting
        try:
            executor = await asyncio.shield(starting)
        finally:
            if self._starting is starting and starting.done():
                self._starting = None
        if self._executor is None:
            self._executor = executor
        return self._executor

    def _start_workers(self) -> Executor:
        # Spawned, not forked: the replica has threads (this one among them), and a forked
        # copy of a lock some thread held would never be released. Not a fork server
        # either: it would outlive the pool, one more process per replica to account for.
        executor = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start,
            initargs=(os.getpid(), self.preload),
        )
        # One job per worker at once, so that every worker starts now, not on the loop.
        for started in [executor.submit(_ready) for _ in range(self.workers)]:
            started.result()
        return executor

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
- **over pipes the event loop reads itself**, no thread in between: the loop writes a
  job to an idle worker's pipe and is woken by its answer, as by a socket. The standard
  library's process pool moves every job through two threads of the replica (a manager
  and a queue feeder), and each of them takes the interpreter's lock from the loop at
  every hand-off: with an attacker's four `crunch` calls handing over slices of 10 ms,
  legitimate users of `get_weather`, which never touches the pool, saw a p95 4.6 times
  their quiet one (`docs/hardening.md`).
- **small work first**: a worker has one job at a time and the pool keeps the rest,
  cheapest first (each job says its `cost_ms`; equal costs in their order of arrival),
  so a 2 ms quote waits for the slice a worker is on, not behind every slice queued
  before it.
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
import heapq
import importlib
import itertools
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from server.protocol.jsonrpc import too_many_requests

T = TypeVar("T")

#: CPU a call hands to the pool at a time, milliseconds.
SLICE_MS = 5.0
#: How much lower the workers' CPU priority is than the replica's (`nice`), where Linux's
#: idle scheduling class is not to be had.
WORKER_NICENESS = 10


def _worker_main(jobs: Connection, modules: tuple[str, ...]) -> None:
    """A worker process: lower priority, the tools' modules, then jobs until its replica goes.

    It ignores Ctrl-C (SIGINT, sent to the whole process group by a terminal or a
    notebook's kernel manager): its replica ends it, and it prints no KeyboardInterrupt
    traceback of its own over the replica's shutdown. It holds the only other end of its
    pipe, so a replica that stops, or is killed, closes it: the worker reads the end and
    exits (after the slice it is on, if any).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(WORKER_NICENESS)
    for module in modules:
        importlib.import_module(module)
    jobs.send(os.getpid())  # ready
    while True:
        try:
            work, args = jobs.recv()
        except (EOFError, OSError):
            return
        try:
            answer: tuple[bool, Any] = (True, work(*args))
        except Exception as error:  # the job's own failure, raised again in its caller
            answer = (False, error)
        try:
            jobs.send(answer)
        except OSError:  # the replica has gone
            return
        except Exception:  # the answer would not pickle: say what it was
            jobs.send((False, RuntimeError(f"a CPU job's answer would not pickle: {answer!r}")))


def _ready() -> int:
    """A job that answers the worker's process id."""
    return os.getpid()


class _Worker:
    """One worker process and the replica's end of its pipe; one job at a time."""

    def __init__(self, modules: tuple[str, ...]) -> None:
        # Spawned, not forked: the replica has threads, and a forked copy of a lock some
        # thread held would never be released.
        context = multiprocessing.get_context("spawn")
        self.pipe, theirs = context.Pipe(duplex=True)
        self.process = context.Process(
            target=_worker_main, args=(theirs, modules), name="cpu-worker", daemon=True
        )
        self.process.start()
        theirs.close()  # the worker's end lives in the worker only
        self.pipe.recv()  # its pid, once its modules are imported: ready
        #: The job's answer to come, and the loop that waits for it; None when idle.
        self.answer: asyncio.Future[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def close(self) -> None:
        """Stop the worker, and drop the job it is on."""
        if self.loop is not None and not self.loop.is_closed() and not self.pipe.closed:
            self.loop.remove_reader(self.pipe.fileno())
        self.pipe.close()
        if self.process.is_alive():
            self.process.terminate()


def _started_worker(modules: tuple[str, ...]) -> _Worker:
    """A new worker, ready; workers that ended before it are reaped first."""
    multiprocessing.active_children()
    return _Worker(modules)


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
        #: Every worker started and not yet lost or closed.
        self._all: set[_Worker] = set()
        #: Workers with no job.
        self._idle: list[_Worker] = []
        #: Workers running or being started.
        self._alive = 0
        self._starting: set[asyncio.Task[None]] = set()
        #: Jobs waiting for a worker: (cost_ms, arrival, the worker once given), cheapest first.
        self._waiting: list[tuple[float, int, asyncio.Future[_Worker]]] = []
        self._arrivals = itertools.count()

    @property
    def started(self) -> bool:
        """Whether the worker processes are running (they start with the first call)."""
        return self._alive > 0

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

    async def run(self, work: Callable[..., T], *args: Any, cost_ms: float) -> T:
        """`work(*args)` in a worker process (a module-level function, picklable arguments),
        once a worker is free and no cheaper job waits; `cost_ms` is its CPU, about.

        A worker that dies on the job (killed, out of memory) raises `BrokenProcessPool`
        here, and another is started in its place.
        """
        worker = await self._worker(cost_ms)
        worker.loop = loop = asyncio.get_running_loop()
        worker.answer = answer = loop.create_future()
        try:
            worker.pipe.send((work, args))
        except OSError as error:  # it died while idle
            self._lost(worker)
            raise BrokenProcessPool("a CPU worker had died") from error
        # The worker is free when its answer comes, not when the caller stops waiting.
        loop.add_reader(worker.pipe.fileno(), self._answered, worker)
        ok, value = await answer
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Stop the workers; the jobs they are on and the jobs waiting are dropped."""
        for worker in self._all:
            worker.close()
        for worker in self._all:
            worker.process.join(timeout=1.0)  # terminated: a moment
        self._all.clear()
        self._idle.clear()
        for _, _, given in self._waiting:
            given.cancel()
        self._waiting.clear()
        self._alive = 0

    async def _worker(self, cost_ms: float) -> _Worker:
        """An idle worker for a job of `cost_ms`, once no cheaper job waits for one."""
        if self._alive == 0:
            self._alive = self.workers
            # Starting a worker (a new interpreter importing `preload`) takes a while, and
            # the loop must not wait for it: a thread starts them, and hands each on.
            self._start(self.workers)
        if self._idle and not self._waiting:
            return self._idle.pop()
        given: asyncio.Future[_Worker] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (cost_ms, next(self._arrivals), given))
        try:
            return await given
        except asyncio.CancelledError:
            if given.done() and not given.cancelled():
                self._hand_on(given.result())  # given as the caller left: pass it on
            raise

    def _start(self, count: int) -> None:
        """Start `count` workers in the background, each handed on as it is ready."""

        async def start() -> None:
            for _ in range(count):
                try:
                    worker = await asyncio.to_thread(_started_worker, self.preload)
                except Exception as error:
                    self._alive -= 1
                    if self._alive <= 0:  # none will come: the jobs waiting fail
                        self._alive = 0
                        for _, _, given in self._waiting:
                            if not given.done():
                                given.set_exception(BrokenProcessPool(f"no CPU worker: {error}"))
                        self._waiting.clear()
                    return
                if self._alive == 0:  # the pool closed meanwhile
                    worker.close()
                    return
                self._all.add(worker)
                self._hand_on(worker)

        task = asyncio.ensure_future(start())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    def _hand_on(self, worker: _Worker) -> None:
        """`worker` is free: to the cheapest job waiting, or to the idle ones."""
        while self._waiting:
            _, _, given = heapq.heappop(self._waiting)
            if not given.done():
                given.set_result(worker)
                return
        self._idle.append(worker)

    def _answered(self, worker: _Worker) -> None:
        """`worker`'s pipe is readable: its answer, or its end."""
        if worker.loop is not None:
            worker.loop.remove_reader(worker.pipe.fileno())
        answer, worker.answer, worker.loop = worker.answer, None, None
        try:
            result = worker.pipe.recv()
        except (EOFError, OSError):
            if answer is not None and not answer.done():
                answer.set_exception(BrokenProcessPool("a CPU worker died on its job"))
            self._lost(worker)
            return
        if answer is not None and not answer.done():
            answer.set_result(result)
        if worker in self._all:
            self._hand_on(worker)
        else:  # the pool closed while it worked
            worker.close()

    def _lost(self, worker: _Worker) -> None:
        """`worker` died or its pipe failed: close it and start another in its place."""
        worker.close()
        if worker in self._all:
            self._all.discard(worker)
            self._start(1)

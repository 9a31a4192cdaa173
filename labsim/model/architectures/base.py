"""What every architecture shares: how a replica works on a call, and how a client retries.

An architecture is a way of carrying a tool call across the user's answers:
hold it open on one replica (SSE + shared store, sticky load balancer) or end
each round and hand the state to the client (MRTR). Each one is a subclass of
`Architecture` whose `call` method is the SimPy process of one tool call
(`labsim.model.call.Call`), from the client's first request to its outcome; they share
the workload, the cluster and the way a replica queues and serves a request (`execute`).
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Generator
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import simpy
from simpy import Interrupt

if TYPE_CHECKING:
    from labsim.model.call import Call
    from labsim.model.cluster import Cluster, Replica
    from labsim.model.metrics import Recorder
    from labsim.model.params import SimParams
    from labsim.model.store import SharedStore

_DELAY_BATCH = 1024  # network delays drawn at once


class Shed(Exception):
    """An overloaded replica stopped a request at its checkpoint (503, or offload under MRTR)."""

    def __init__(self, done_s: float) -> None:
        super().__init__(done_s)
        self.done_s = done_s


class Architecture(ABC):
    """A way of serving tool calls that ask the user for input, on a shared cluster.

    Subclasses implement `call`. What they share: `execute` (queue for a worker,
    work, maybe shed at the checkpoint), `back_off` (the client's retry delay),
    `answer` (counting re-prompts) and `finish` (recording the outcome).
    """

    name: ClassVar[str]
    uses_store: ClassVar[bool] = False  # pays for a shared store
    sticky: ClassVar[bool] = False  # the load balancer pins a call to one replica
    can_offload: ClassVar[bool] = False  # can hand checkpointed progress to another replica

    def __init__(
        self,
        env: simpy.Environment,
        params: SimParams,
        cluster: Cluster,
        store: SharedStore,
        recorder: Recorder,
        rng: random.Random,
    ) -> None:
        self.env = env
        self.params = params
        self.cluster = cluster
        self.store = store
        self.recorder = recorder
        self._random = rng.random
        cluster_params = params.cluster
        self.worker_speed = cluster_params.worker_speed
        self.overhead_s = params.workload.request_overhead_s
        self.network_rtt_s = cluster_params.network_rtt_s
        cv = cluster_params.network_rtt_cv
        self._rtt_sigma = math.sqrt(math.log1p(cv * cv))
        self._rtt_mu = math.log(self.network_rtt_s or 1.0) - self._rtt_sigma**2 / 2
        # Network delays drawn a batch at a time from a stream of their own: one NumPy
        # call per batch costs less than a Python draw per request.
        self._delay_rng = np.random.default_rng(rng.getrandbits(64))
        self._delays: list[float] = []
        self.sheds = cluster_params.shed_policy != "none"
        self.offloads = cluster_params.shed_policy == "mrtr-offload" and self.can_offload
        self.shed_threshold = cluster_params.shed_queue_threshold
        self.checkpoint_fraction = cluster_params.checkpoint_fraction
        self.t0, self.t1 = params.warmup_s, params.horizon_s
        self.requests = 0  # requests served (queued for a worker), for the benchmark
        self.waits = 0  # times a call waited on its user, for the benchmark

    def start(self, call: Call) -> None:
        """A call arrives: it is in flight until `finish`."""
        self.cluster.in_flight.move(self.env.now, 1)
        self.env.process(self.call(call))

    @abstractmethod
    def call(self, call: Call) -> Generator[simpy.Event, object, None]:
        """The SimPy process of one tool call, from the first request to its outcome."""

    def execute(
        self, call: Call, replica: Replica, cpu_s: float, sheddable: bool, crosses: bool = True
    ) -> Generator[simpy.Event, object, None]:
        """Queue for a worker on `replica` and work `cpu_s` seconds of CPU on the call (a
        worker slower than a whole CPU, `worker_speed`, takes longer over it).

        `crosses`: the work comes with a request that crosses the wire and the load
        balancer. A held legacy call resuming after its answer's POST does not: that POST
        crossed (in, and its 202 out), and the resumed work queues for the worker again.

        With a shedding policy, a sheddable request reaches a checkpoint after
        `checkpoint_fraction` of its work; if more than `shed_queue_threshold`
        requests are then waiting, the replica stops and raises `Shed`. A cut
        (crash, drain) arrives as `Interrupt`; the worker is freed either way.
        """
        env = self.env
        if crosses and self.network_rtt_s:
            # The request and its response cross the wire and the load balancer; no
            # worker is busy meanwhile.
            yield env.timeout(self.network_delay_s())
        self.requests += 1
        work_s = cpu_s if self.worker_speed == 1.0 else cpu_s / self.worker_speed
        workers = replica.workers
        queued_at = env.now
        waiting = workers.acquire()
        started = -1.0
        try:
            if waiting is not None:
                yield waiting
            started = env.now
            call.queue_wait_s += started - queued_at
            if sheddable and self.sheds:
                first = work_s * self.checkpoint_fraction
                yield env.timeout(first)
                if len(workers.queue) > self.shed_threshold:
                    workers.release()
                    self._account(call, replica, first)
                    raise Shed(cpu_s * self.checkpoint_fraction)
                yield env.timeout(work_s - first)
            else:
                yield env.timeout(work_s)
        except Interrupt:
            if workers.leave(waiting) and started >= 0:
                self._account(call, replica, env.now - started)
            raise
        workers.release()
        self._account(call, replica, work_s)

    def network_delay_s(self) -> float:
        """One request's time on the wire and in the load balancer (lognormal, given mean)."""
        if not self._rtt_sigma:
            return self.network_rtt_s
        if not self._delays:
            batch = self._delay_rng.lognormal(self._rtt_mu, self._rtt_sigma, _DELAY_BATCH)
            self._delays = batch.tolist()
        return self._delays.pop()

    def _account(self, call: Call, replica: Replica, cpu_s: float) -> None:
        call.cpu_s += cpu_s
        replica.worked_s += cpu_s
        if self.t0 <= self.env.now <= self.t1:
            replica.busy_s += cpu_s

    def back_off(self, call: Call) -> float | None:
        """The client's delay before retrying a rejected request; None once it gives up.

        Exponential backoff with jitter: about `retry_backoff_s` * 2^(k-1) before
        retry k, at most `max_retries` retries per call.
        """
        call.retries += 1
        client = self.params.client
        if call.retries > client.max_retries:
            return None
        return client.retry_backoff_s * 2 ** (call.retries - 1) * (0.5 + self._random())

    def take(self, call: Call) -> Replica | None:
        """The replica the balancer sends a request of `call` to, if it takes the request.

        The request then holds a connection on it (`Replica.release` or `Replica.close`
        when it ends). No replica takes it when none is in rotation (the balancer answers
        503) or the one picked is at its connection limit (it answers 503).
        """
        replica = self.cluster.route(call)
        if replica is not None and replica.admit():
            return replica
        return None

    def retry_until_taken(self, call: Call) -> Generator[simpy.Event, object, Replica | None]:
        """After a rejected request: back off and try again until a replica takes it.

        None once the client gives up. Callers write `self.take(call) or (yield
        from self.retry_until_taken(call))`, so a request taken at once, the
        usual case, starts no generator.
        """
        while (yield from self.wait_to_retry(call)):
            replica = self.take(call)
            if replica is not None:
                return replica
        return None

    def wait_to_retry(self, call: Call) -> Generator[simpy.Event, object, bool]:
        """Back off before retrying a rejected request; False once the client gives up."""
        delay = self.back_off(call)
        if delay is None:
            return False
        yield self.env.timeout(delay)
        return True

    def answer(self, call: Call, questions: int) -> None:
        """The user answers `questions` (a mask); answering one given before is a re-prompt."""
        call.answers += questions.bit_count()
        call.re_prompts += (call.answered_ever & questions).bit_count()
        call.answered_ever |= questions

    def finish(self, call: Call, outcome: str) -> None:
        """The call ends with `outcome` (completed, failed, lost, abandoned)."""
        now = self.env.now
        self.recorder.calls.append(call.record(now, outcome))
        self.cluster.in_flight.move(now, -1)

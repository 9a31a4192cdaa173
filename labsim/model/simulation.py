"""One simulated run: a workload replayed against an architecture on a cluster, with faults.

`simulate(params, architecture, seed)` is the whole public entry point: it
draws the workload from the seed (the same for every architecture), builds
the cluster, the store, the load balancer and the architecture, starts the
arrivals, the faults and a sampler, runs SimPy until the last call has ended,
and returns a `RunResult`.
"""

from __future__ import annotations

import random
from collections.abc import Generator
from typing import Any, cast

import numpy as np
import pandas as pd
import simpy

from labsim.model.architectures.base import Architecture
from labsim.model.architectures.mrtr import Mrtr
from labsim.model.architectures.persistent import PersistentTools
from labsim.model.architectures.sse_store import SseStore
from labsim.model.architectures.sticky import Sticky
from labsim.model.call import Call, Session
from labsim.model.checks import ParameterError
from labsim.model.cluster import Cluster, ReplicaState
from labsim.model.cost import SECONDS_PER_HOUR, Usage, bill
from labsim.model.demand import WorkloadParams
from labsim.model.health_check import HealthChecks
from labsim.model.metrics import (
    EVENT_COLUMNS,
    REPLICA_COLUMNS,
    TIMELINE_COLUMNS,
    Recorder,
    RunResult,
    calls_frame,
    littles_law,
    summarize,
)
from labsim.model.params import SimParams
from labsim.model.store import SharedStore
from labsim.model.task_store import TaskStore, summarize_tasks, tasks_frame
from labsim.model.tools import SimTool
from labsim.model.workload import MAX_CALLS_PER_RUN, draw_workload, expected_calls


def tool_sizes(tool: SimTool, workload: WorkloadParams) -> tuple[int, int]:
    """The bytes of a request and a response body per round of `tool`: its own, else the
    workload's."""
    request = workload.request_bytes if tool.request_bytes is None else tool.request_bytes
    response = workload.response_bytes if tool.response_bytes is None else tool.response_bytes
    return request, response


ARCHITECTURES: dict[str, type[Architecture]] = {
    SseStore.name: SseStore,
    Sticky.name: Sticky,
    Mrtr.name: Mrtr,
}


class Simulation:
    """The simulated world of one run: clock, cluster, store, architecture, recorder.

    It is the `labsim.model.faults.World` the faults and the autoscaler act on.
    """

    def __init__(self, params: SimParams, architecture: str, seed: int) -> None:
        if architecture not in ARCHITECTURES:
            raise ParameterError(
                f"unknown architecture {architecture!r}; choose from {', '.join(ARCHITECTURES)}"
            )
        self.params = params
        self.seed = seed
        self.env = simpy.Environment()
        self.recorder = Recorder()
        # Independent streams: the workload's depends on the seed alone, so every
        # architecture sees the same calls (common random numbers).
        workload_seq, routing_seq, client_seq, tasks_seq = np.random.SeedSequence(seed).spawn(4)
        pieces = [piece for fault in params.faults for piece in fault.arrival_pieces()]
        check_size(params, pieces)
        self.workload = draw_workload(params.workload, params.horizon_s, workload_seq, pieces)
        kind = ARCHITECTURES[architecture]
        self.cluster = Cluster(
            self.env,
            params.cluster,
            random.Random(int(routing_seq.generate_state(1)[0])),
            self.recorder,
            (params.warmup_s, params.horizon_s),
            sticky=kind.sticky,
        )
        self.store = SharedStore(self.env, params.store, self.recorder)
        self.architecture = kind(
            self.env,
            params,
            self.cluster,
            self.store,
            self.recorder,
            random.Random(int(client_seq.generate_state(1)[0])),
        )
        self.task_store = TaskStore(self.env, params.tasks, self.store)
        self.persistent = PersistentTools(self.env, params, self.architecture, self.task_store)
        # Which calls are to persistent tools: a stream of their own, so the other draws
        # stay what they are without tasks.
        share = params.tasks.persistent_share
        draws = np.random.default_rng(tasks_seq).random(len(self.workload))
        self.is_task = (draws < share).tolist()
        self.upgrade_duration_s = float("nan")

    def arrivals(self) -> Generator[simpy.Event, object, None]:
        """The client population: each call starts at its drawn arrival time."""
        env = self.env
        workload = self.workload
        start, start_task, is_task = self.architecture.start, self.persistent.start, self.is_task
        timeout = env.timeout
        specs = self.params.workload.specs()
        sizes = [tool_sizes(spec, self.params.workload) for spec in specs]
        paths = workload.path.tolist() if workload.path is not None else [0.0] * len(workload)
        rows = zip(
            workload.tool.tolist(),
            workload.cpu_s.tolist(),
            workload.think_s.tolist(),
            paths,
            strict=True,
        )
        shared = self.params.workload.calls_per_session > 1
        sessions: dict[int, Session] = {}
        for index, (arrival_s, session, (tool, cpu, think, path)) in enumerate(
            zip(workload.arrival_s.tolist(), workload.session.tolist(), rows, strict=True)
        ):
            if arrival_s > env.now:
                yield timeout(arrival_s - env.now)
            user = sessions.setdefault(session, Session()) if shared else None
            spec = specs[tool].for_call(path)
            call = Call(index, tool, spec, env.now, cpu, think, user, sizes[tool])
            if is_task[index]:
                start_task(call)
            else:
                start(call)

    def sampler(self) -> Generator[simpy.Event, object, None]:
        """Every `sample_every_s`, note the cluster's levels for the time series."""
        env, cluster, params = self.env, self.cluster, self.params
        held_call_bytes = params.cluster.held_call_bytes
        while env.now <= params.horizon_s:
            self.recorder.samples.append(
                (
                    env.now,
                    cluster.in_flight.value,
                    cluster.held.value * held_call_bytes,
                    cluster.streams.value,
                    sum(r.state is ReplicaState.UP for r in cluster.replicas),
                    cluster.billed.value,
                    cluster.busy_workers(),
                    cluster.queued_requests(),
                )
            )
            yield env.timeout(params.sample_every_s)

    def run(self) -> RunResult:
        """Run until the last call has ended; return what was measured."""
        env = self.env
        env.process(self.arrivals())
        env.process(self.sampler())
        if self.params.cluster.health_check_interval_s > 0:
            checks = HealthChecks(env, self.cluster, self.params.cluster, self.params.horizon_s)
            env.process(checks.run())
        for fault in self.params.faults:
            env.process(fault.run(self))
        if self.params.autoscaler is not None:
            env.process(self.params.autoscaler.run(self))
        env.run()
        return self.result()

    def result(self) -> RunResult:
        """Turn the recorder's tuples and the gauges into a `RunResult`."""
        params = self.params
        window = (params.warmup_s, params.horizon_s)
        calls = calls_frame(self.recorder.calls, *window)
        summary = summarize(calls, params, self._cluster_levels())
        tasks = tasks_frame(self.task_store, *window)
        summary.update(summarize_tasks(tasks, self.task_store, window))
        self._add_bill(summary)
        result = RunResult(
            architecture=self.architecture.name,
            seed=self.seed,
            params=params,
            calls=calls,
            timeline=pd.DataFrame.from_records(
                self.recorder.samples, columns=list(TIMELINE_COLUMNS)
            ),
            events=pd.DataFrame.from_records(self.recorder.events, columns=list(EVENT_COLUMNS)),
            summary=summary,
            tasks=tasks,
            replicas=pd.DataFrame.from_records(
                self.recorder.replica_samples, columns=list(REPLICA_COLUMNS)
            ),
        )
        law = littles_law(result)
        summary["littles_law_ratio"] = law.ratio
        summary["littles_law_error"] = law.relative_error
        return result

    def _cluster_levels(self) -> dict[str, object]:
        """What the cluster's gauges and replicas measured: calls in flight and held, memory,
        streams, connections, utilization and its spread over the replicas."""
        params, cluster = self.params, self.cluster
        window_s = params.horizon_s - params.warmup_s
        held_call_bytes = params.cluster.held_call_bytes
        capacity_s = params.cluster.workers_per_replica * window_s
        utilization = [r.busy_s / capacity_s for r in cluster.replicas]
        mean_utilization = float(np.mean(utilization))
        return {
            "mean_in_flight_calls": cluster.in_flight.mean(),
            "peak_in_flight_calls": cluster.in_flight.peak,
            "mean_held_bytes": cluster.held.mean() * held_call_bytes,
            "peak_held_bytes": cluster.held.peak * held_call_bytes,
            "peak_replica_held_bytes": max(r.peak_held for r in cluster.replicas) * held_call_bytes,
            "peak_replica_connections": max(r.peak_connections for r in cluster.replicas),
            # Requests a full replica answered 503, requests the balancer could send nowhere
            # (no replica in rotation), and replicas its health checks took out of rotation
            # (full_marks: because they were at their connection limit).
            "refused_requests": sum(r.refused for r in cluster.replicas),
            "unrouted_requests": cluster.unrouted,
            "down_marks": cluster.down_marks,
            "full_marks": cluster.full_marks,
            "mean_open_streams": cluster.streams.mean(),
            "peak_open_streams": cluster.streams.peak,
            "utilization": mean_utilization,
            "utilization_per_replica": utilization,
            "load_imbalance": max(utilization) / mean_utilization if mean_utilization else 1.0,
            "upgrade_duration_s": self.upgrade_duration_s,
        }

    def _add_bill(self, summary: dict[str, Any]) -> None:
        """Add what the run consumed and its bill to `summary`: replica-hours (and how busy
        they were), the store if one was needed, egress, and the cost per million calls."""
        params, cluster = self.params, self.cluster
        window_s = params.horizon_s - params.warmup_s
        # Tasks live in the shared store: an architecture that needs none for its other
        # calls pays for one as soon as some calls are persistent.
        needs_store = self.architecture.uses_store or params.tasks.persistent_share > 0
        replica_hours = cluster.billed.mean() * window_s / SECONDS_PER_HOUR
        busy_s = sum(r.busy_s for r in cluster.replicas)
        billed_worker_s = replica_hours * SECONDS_PER_HOUR * params.cluster.workers_per_replica
        summary["fleet_utilization"] = busy_s / billed_worker_s if billed_worker_s else 0.0
        usage = Usage(
            replica_hours=replica_hours,
            store_hours=window_s / SECONDS_PER_HOUR if needs_store else 0.0,
            store_ops=cast(int, summary["store_ops"]),
            egress_bytes=cast(int, summary["bytes_out"]),
            calls=cast(int, summary["calls"]),
        )
        costs = bill(usage, params)
        summary.update({f"cost_{k}": v for k, v in costs.as_dict().items()})
        summary["replica_hours"] = usage.replica_hours
        summary["store_hours"] = usage.store_hours
        summary["cost_per_million_calls_usd"] = costs.per_million_calls_usd(usage.calls)
        summary["store_share_of_bill"] = (
            costs.store_usd / costs.total_usd if costs.total_usd else float("nan")
        )


def check_size(params: SimParams, pieces: list[tuple[float, float, float]]) -> None:
    """Refuse, before anything is drawn, a run too large for memory: too many calls (the
    rate over the horizon) or too many samples of the time series."""
    calls = expected_calls(params.workload, params.horizon_s, pieces)
    if calls > MAX_CALLS_PER_RUN:
        raise ParameterError(
            f"arrival_rate_per_s {params.workload.arrival_rate_per_s:g} over horizon_s "
            f"{params.horizon_s:g} asks for about {calls:.3g} calls in one run; a run keeps "
            f"every call (about 2 KB each), so at most {MAX_CALLS_PER_RUN:,}: lower the rate "
            "or the horizon"
        )
    samples = params.horizon_s / params.sample_every_s
    if samples > MAX_CALLS_PER_RUN:
        raise ParameterError(
            f"horizon_s {params.horizon_s:g} sampled every sample_every_s "
            f"{params.sample_every_s:g} is {samples:.3g} samples; at most {MAX_CALLS_PER_RUN:,}"
        )


def simulate(
    params: SimParams | None = None, architecture: str = "mrtr", seed: int = 0
) -> RunResult:
    """Simulate one run of `architecture` ("sse-store", "sticky" or "mrtr") under `params`.

    The same `seed` gives the same calls, tools, CPU and think times to every
    architecture, so results can be compared call for call.
    """
    return Simulation(params or SimParams(), architecture, seed).run()

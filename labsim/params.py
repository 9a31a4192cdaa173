"""Parameters of a simulated MCP deployment, each default with its source.

A deployment is described by a handful of frozen dataclasses: who calls and how
(`WorkloadParams`, `ClientParams`), what serves them (`ClusterParams`), the shared
store the SSE architecture needs (`StoreParams`), the sealed `requestState` MRTR
carries (`StateParams`) and the prices (`CostParams`). `SimParams` gathers them
with the faults to inject and the simulated horizon; the CLI, the scenarios and
the notebooks all fill one `SimParams`.

Every field carries its unit in its name (`_s`, `_bytes`, `_per_s`, `_usd`) and a
comment saying where its default comes from (a measurement of the lab's own
server in `labsim/measured.json`, written by `python -m loadtest measure`, a
documented product default, or a stated assumption); `docs/model.md` lists
them all with their sources.
Values outside their domain raise `ParameterError` when the dataclass is built.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from labsim.tools import TOOLS

if TYPE_CHECKING:
    from labsim.faults import Fault

SERVICE_TIME_KINDS = ("exponential", "deterministic", "lognormal")
BALANCER_POLICIES = ("round-robin", "random", "least-connections", "power-of-two", "cookie-sticky")
SHED_POLICIES = ("none", "reject-503", "mrtr-offload")


class ParameterError(ValueError):
    """A parameter outside its domain: a negative rate, no replicas, an unknown name."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ParameterError(message)


def _check_numbers(owner: object, *names: str, positive: bool = False) -> None:
    """Each named field is a number >= 0, or > 0 when `positive`."""
    for name in names:
        value = getattr(owner, name)
        number = isinstance(value, int | float) and not math.isnan(value)
        _require(
            number and (value > 0 if positive else value >= 0),
            f"{name} must be a number {'>' if positive else '>='} 0, got {value!r}",
        )


def _check_fraction(owner: object, *names: str) -> None:
    for name in names:
        value = getattr(owner, name)
        _require(
            isinstance(value, int | float) and 0 <= value <= 1,
            f"{name} must be between 0 and 1, got {value!r}",
        )


@dataclass(frozen=True)
class ServiceTime:
    """How long a worker is busy with one request: a distribution with a mean.

    A barber's haircut takes twenty minutes on average, sometimes ten, sometimes
    forty. `exponential` is the memoryless case queueing theory assumes,
    `deterministic` the opposite extreme, `lognormal` what measured service
    times usually look like (its spread set by the coefficient of variation).
    """

    mean_s: float = 0.050  # assumption: a tool that parses, validates and calls an API client
    kind: str = "exponential"  # M/M/c, where queueing theory has closed forms
    cv: float = 1.0  # lognormal spread (std / mean); the exponential's own value

    def __post_init__(self) -> None:
        _check_numbers(self, "mean_s")
        _check_numbers(self, "cv", positive=True)
        _require(
            self.kind in SERVICE_TIME_KINDS,
            f"service time kind must be one of {', '.join(SERVICE_TIME_KINDS)}, got {self.kind!r}",
        )


@dataclass(frozen=True)
class WorkloadParams:
    """Who calls the tools: arrivals, the tool mix, server CPU and the users' think time.

    Calls arrive as a Poisson process (optionally with piecewise-constant rate
    multipliers). A call is to a tool that asks the user 0, 1 or 2 questions;
    each round of server work costs a request overhead plus the tool's own CPU.
    A user thinks for a lognormal time before answering; some never answer.
    """

    arrival_rate_per_s: float = 8.0  # assumption: a small deployment, quick to sweep
    rate_profile: tuple[tuple[float, float], ...] = ()  # (start_s, multiplier) pieces; () = flat
    # The simulated demo tools (`labsim.tools`) and the share of calls to each: none asks,
    # one asks one question, one asks two in one round (assumption).
    tools: tuple[str, ...] = ("crunch", "get_weather", "link_accounts")
    tool_mix: tuple[float, ...] = (0.5, 0.3, 0.2)  # assumption: share of calls per tool
    round_cpu: ServiceTime = field(default_factory=ServiceTime)  # calibrated from the live swarm
    request_overhead_s: float = 0.000186  # measured.json: replica CPU per round (fitted)
    think_median_s: float = 10.0  # docs/model.md: stated assumption, lognormal, median 10 s
    think_sigma: float = 1.5  # lognormal shape: p95 = 10 s * e^(1.645*1.5) = about 2 minutes
    think_scale: float = 1.0  # multiplier for sweeps; 0 = users answer instantly
    never_answer_fraction: float = 0.05  # docs/model.md: assumption (the seed: maybe never)
    calls_per_session: float = 1.0  # assumption: each call its own session unless a scenario says
    session_s: float = 1800.0  # assumption: a session's calls spread over half an hour
    request_bytes: int = 445  # measured.json: mean JSON-RPC request body per round
    response_bytes: int = 322  # measured.json: mean JSON-RPC response body per round

    def __post_init__(self) -> None:
        _check_numbers(
            self, "arrival_rate_per_s", "think_median_s", "think_sigma", "session_s", positive=True
        )
        _require(self.calls_per_session >= 1, "calls_per_session must be >= 1")
        _check_numbers(self, "request_overhead_s", "think_scale", "request_bytes", "response_bytes")
        _check_fraction(self, "never_answer_fraction")
        _require(
            isinstance(self.round_cpu, ServiceTime),
            f"round_cpu must be a ServiceTime, got {self.round_cpu!r}",
        )
        unknown = [name for name in self.tools if name not in TOOLS]
        _require(not unknown, f"unknown tools {unknown!r}; choose from {', '.join(TOOLS)}")
        _require(
            len(self.tool_mix) == len(self.tools)
            and all(share >= 0 for share in self.tool_mix)
            and math.isclose(sum(self.tool_mix), 1.0),
            f"tool_mix must be one share >= 0 per tool ({len(self.tools)}) summing to 1, "
            f"got {self.tool_mix!r}",
        )
        starts = [start for start, _ in self.rate_profile]
        _require(
            starts == sorted(starts) and all(s >= 0 and m >= 0 for s, m in self.rate_profile),
            "rate_profile must be (start_s, multiplier) pairs, sorted, all >= 0",
        )


@dataclass(frozen=True)
class ClientParams:
    """What the MCP client does when things go wrong: time-outs, retries, restarts."""

    answer_timeout_s: float = 300.0  # assumption: a question unanswered for 5 minutes is dropped
    retry_backoff_s: float = 1.0  # assumption: first retry after 1 s, then doubling with jitter
    max_retries: int = 4  # assumption: a client gives up after 4 retried requests
    max_call_restarts: int = 2  # assumption: an agent re-runs a broken tool call twice
    reconnect_delay_s: float = 0.5  # assumption: noticing a dropped stream and reconnecting
    offload_retry_delay_s: float = 0.0  # docs/model.md: a state-only result is retried at once
    # Legacy: when a client learns that a held call was cut while its user thinks. False
    # (assumption): it watches the stream and restarts at once; True: only when the answer
    # POST is refused, after the user has answered (the load test's client does this).
    cut_noticed_on_answer: bool = False

    def __post_init__(self) -> None:
        _check_numbers(self, "answer_timeout_s", positive=True)
        _check_numbers(
            self,
            "retry_backoff_s",
            "max_retries",
            "max_call_restarts",
            "reconnect_delay_s",
            "offload_retry_delay_s",
        )


@dataclass(frozen=True)
class ClusterParams:
    """The replicas behind the load balancer, and the load balancer itself.

    Each replica is a server process with worker slots (one per vCPU), a limit
    on open connections and memory. `shed_policy` says what an overloaded
    replica does at a request's checkpoint: nothing, answer 503 (the work so
    far is thrown away), or hand its progress back in `requestState` so that
    another replica resumes (MRTR only; the legacy protocol has no way to carry
    progress, so legacy architectures fall back to 503).
    """

    replicas: int = 4  # assumption: a small deployment, quick to sweep
    workers_per_replica: int = 2  # one worker per vCPU
    vcpus_per_replica: float = 2.0  # AWS Fargate task size 2 vCPU
    memory_gb_per_replica: float = 4.0  # the smallest Fargate memory for 2 vCPU
    connection_limit: int = 1024  # Linux default soft limit on open files (ulimit -n)
    lb_policy: str = "round-robin"  # AWS ALB and HAProxy default algorithm
    lb_idle_timeout_s: float = 60.0  # AWS ALB default idle timeout
    sse_keepalive_s: float = 15.0  # sse-starlette's default ping interval; 0 = no keep-alives
    held_call_bytes: int = 25_436  # measured.json: RSS a held get_weather call adds (25 KiB)
    shed_policy: str = "none"  # no load shedding unless a scenario asks for it
    shed_queue_threshold: int = 8  # assumption: shed when 4 requests per worker wait
    checkpoint_fraction: float = 0.5  # assumption: a tool checkpoints halfway through its work
    tool_version: int = 1  # the seed's old tool: asks github_login, then google_login
    network_rtt_s: float = 0.000572  # measured.json: wire + LB + client per round
    network_rtt_cv: float = 0.301  # measured.json: spread (std / mean) of that delay

    def __post_init__(self) -> None:
        for name in ("replicas", "workers_per_replica", "connection_limit"):
            value = getattr(self, name)
            _require(
                isinstance(value, int) and value >= 1,
                f"{name} must be an integer >= 1, got {value!r}",
            )
        _check_numbers(
            self, "vcpus_per_replica", "memory_gb_per_replica", "lb_idle_timeout_s", positive=True
        )
        _check_numbers(
            self,
            "sse_keepalive_s",
            "held_call_bytes",
            "shed_queue_threshold",
            "network_rtt_s",
            "network_rtt_cv",
        )
        _check_fraction(self, "checkpoint_fraction")
        _require(
            self.lb_policy in BALANCER_POLICIES,
            f"lb_policy must be one of {', '.join(BALANCER_POLICIES)}, got {self.lb_policy!r}",
        )
        _require(
            self.shed_policy in SHED_POLICIES,
            f"shed_policy must be one of {', '.join(SHED_POLICIES)}, got {self.shed_policy!r}",
        )
        _require(
            self.tool_version in (1, 2), f"tool_version must be 1 or 2, got {self.tool_version}"
        )

    @property
    def keepalives_on(self) -> bool:
        """Whether SSE keep-alives reach the load balancer before its idle timeout."""
        return 0 < self.sse_keepalive_s < self.lb_idle_timeout_s


@dataclass(frozen=True)
class StoreParams:
    """The shared store (Redis) that carries an answer to the replica waiting for it."""

    round_trip_s: float = 0.0002  # Redis latency docs: round trip in-region, 1 Gbit/s
    op_service_s: float = 0.00001  # Redis runs commands on one thread: ~100k ops/s
    ops_per_answer: int = 3  # assumption: SUBSCRIBE before asking, PUBLISH, UNSUBSCRIBE
    ecpus_per_op: float = 1.0  # ElastiCache Serverless: 1 ECPU per KB; answers are < 1 KB
    billed_gb: float = 1.0  # ElastiCache Serverless (Redis OSS) meters at least 1 GB

    def __post_init__(self) -> None:
        _check_numbers(self, "round_trip_s", "op_service_s", "ops_per_answer", "ecpus_per_op")
        _check_numbers(self, "billed_gb")


@dataclass(frozen=True)
class TaskParams:
    """Persistent tools: the share of calls that run as tasks, and how the server keeps them.

    A task does long work in checkpointed steps and may park in `input_required` while
    its user thinks. It lives in the shared store under every architecture, so an
    architecture that needs no store for its other calls (MRTR, sticky) pays for one as
    soon as this share is above zero. The server's own task defaults are in
    `server/config.py` (`task_lease_s`, `task_poll_interval_ms`, `task_default_ttl_ms`,
    `task_store_timeout_s`); the sizes were measured on its in-process replica.
    """

    persistent_share: float = 0.0  # no tasks unless a scenario asks; `persistent` sets 0.2
    work_s: float = 60.0  # assumption: a VM in a minute (the demo's provision_vm caps at 60 s)
    steps: int = 4  # server/tools/demo.py: provision_vm checkpoints at each of its 4 steps
    lease_s: float = 10.0  # server config task_lease_s; renewed every third of it
    poll_interval_s: float = 0.25  # server config task_poll_interval_ms (250 ms)
    ttl_s: float = 3600.0  # server config task_default_ttl_ms: a task is kept one hour
    store_timeout_s: float = 1.0  # server config task_store_timeout_s: an outage errs within it
    record_bytes: int = 800  # measured: a provision_vm task's stored JSON, 757-796 B (a test)
    poll_request_bytes: int = 390  # measured: a tasks/get request body, 340-388 B
    poll_response_bytes: int = 300  # measured: a tasks/get answer while working, 296-306 B
    store_keeps_tasks: bool = True  # Redis docs: appendonly (AOF) replays on restart; no task lost

    def __post_init__(self) -> None:
        _check_fraction(self, "persistent_share")
        _check_numbers(self, "lease_s", "poll_interval_s", "ttl_s", positive=True)
        _check_numbers(
            self,
            "work_s",
            "store_timeout_s",
            "record_bytes",
            "poll_request_bytes",
            "poll_response_bytes",
        )
        _require(
            isinstance(self.steps, int) and self.steps >= 1,
            f"steps must be an integer >= 1, got {self.steps!r}",
        )


@dataclass(frozen=True)
class StateParams:
    """The sealed `requestState` an MRTR server hands the client between rounds."""

    seal_cpu_s: float = 3.02e-6  # measured.json: seal of a 1 KB state, in process
    open_cpu_s: float = 4.22e-6  # measured.json: open of the same state, in process
    base_bytes: int = 300  # assumption: nonce, tag, key id, principal, expiry, digest, base64
    bytes_per_answer: int = 200  # assumption: one short answer, sealed and base64-encoded
    checkpoint_bytes: int = 4_096  # assumption: the progress of a half-done request
    state_ttl_s: float = 600.0  # the server's --state-ttl-s default: older states are asked anew
    reexecution_fraction: float = 0.0  # assumption: earlier rounds not redone; 1 = rerun from top

    def __post_init__(self) -> None:
        _check_numbers(
            self, "seal_cpu_s", "open_cpu_s", "base_bytes", "bytes_per_answer", "checkpoint_bytes"
        )
        _check_numbers(self, "reexecution_fraction")
        _check_numbers(self, "state_ttl_s", positive=True)


@dataclass(frozen=True)
class CostParams:
    """Prices, in US dollars, of what a deployment consumes."""

    vcpu_hour_usd: float = 0.04048  # AWS Fargate on-demand, Linux/x86, us-east-1
    gb_hour_usd: float = 0.004445  # AWS Fargate on-demand, Linux/x86, us-east-1
    store_gb_hour_usd: float = 0.125  # ElastiCache Serverless (Redis OSS)
    store_usd_per_million_ecpu: float = 0.0034  # ElastiCache Serverless (Redis OSS)
    egress_usd_per_gb: float = 0.09  # AWS data transfer out, first 10 TB tier

    def __post_init__(self) -> None:
        _check_numbers(
            self,
            "vcpu_hour_usd",
            "gb_hour_usd",
            "store_gb_hour_usd",
            "store_usd_per_million_ecpu",
            "egress_usd_per_gb",
        )


@dataclass(frozen=True)
class SimParams:
    """One simulated deployment: workload, client, cluster, store, state, prices, faults.

    Calls arrive until `horizon_s`; the ones still in flight then run to their
    end. Statistics count calls that arrive in [`warmup_s`, `horizon_s`] and
    time averages over the same window, so the fill-up of held calls at the
    start does not bias them.
    """

    workload: WorkloadParams = field(default_factory=WorkloadParams)
    client: ClientParams = field(default_factory=ClientParams)
    cluster: ClusterParams = field(default_factory=ClusterParams)
    store: StoreParams = field(default_factory=StoreParams)
    state: StateParams = field(default_factory=StateParams)
    tasks: TaskParams = field(default_factory=TaskParams)
    cost: CostParams = field(default_factory=CostParams)
    faults: tuple[Fault, ...] = ()
    horizon_s: float = 900.0  # assumption: 15 simulated minutes, long enough for every fault
    warmup_s: float = 300.0  # held calls fill up within one answer timeout (300 s)
    sample_every_s: float = 5.0  # time-series resolution, fine enough to see a fault

    def __post_init__(self) -> None:
        _check_numbers(self, "horizon_s", "sample_every_s", positive=True)
        _check_numbers(self, "warmup_s")
        _require(
            self.warmup_s < self.horizon_s,
            f"warmup_s ({self.warmup_s}) must be shorter than horizon_s ({self.horizon_s})",
        )
        for fault in self.faults:
            fault.check(self)

    def with_overrides(self, **overrides: Any) -> SimParams:
        """A copy with some fields replaced, named by field alone (`replicas=8`).

        A name is looked up in this dataclass, then in each part (workload,
        client, cluster, store, state, tasks, cost), then in the faults (every fault
        with that field gets the value). An unknown name is a `ParameterError`.
        """
        top: dict[str, Any] = {}
        parts: dict[str, dict[str, Any]] = {}
        fault_fields: dict[str, Any] = {}
        part_names = ("workload", "client", "cluster", "store", "state", "tasks", "cost")
        for name, value in overrides.items():
            if name in _field_names(self):
                top[name] = value
                continue
            owner = next((p for p in part_names if name in _field_names(getattr(self, p))), None)
            if owner is not None:
                parts.setdefault(owner, {})[name] = value
            elif any(name in _field_names(f) for f in self.faults):
                fault_fields[name] = value
            else:
                raise ParameterError(f"unknown parameter {name!r}")
        for owner, values in parts.items():
            top[owner] = dataclasses.replace(getattr(self, owner), **values)
        if fault_fields:
            top["faults"] = tuple(
                dataclasses.replace(
                    f, **{k: v for k, v in fault_fields.items() if k in _field_names(f)}
                )
                for f in top.get("faults", self.faults)
            )
        return dataclasses.replace(self, **top)


def _field_names(instance: object) -> set[str]:
    return {f.name for f in dataclasses.fields(instance)}  # type: ignore[arg-type]

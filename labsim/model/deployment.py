"""What serves the calls and what it costs: replicas, the shared store, tasks, state, prices.

`ClusterParams` describes the replicas and the load balancer in front of them,
`StoreParams` the shared store (Redis), `TaskParams` how persistent tools keep their
tasks in it, `StateParams` the sealed `requestState` MRTR carries, and `CostParams`
the prices. Each default carries its source in a comment (a measurement of the lab's
own server in `labsim/measured.json`, a documented product default, or a stated
assumption); `docs/model.md` lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from labsim.model.checks import check_fraction, check_numbers, require

BALANCER_POLICIES = ("round-robin", "random", "least-connections", "power-of-two", "cookie-sticky")
SHED_POLICIES = ("none", "reject-503", "mrtr-offload")


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
    # The share of a CPU a worker gets: a replica of less than one vCPU (Fargate sells
    # 0.25 and 0.5) runs its one worker on that share, its work taking that much longer.
    worker_speed: float = 1.0
    vcpus_per_replica: float = 2.0  # AWS Fargate task size 2 vCPU
    memory_gb_per_replica: float = 4.0  # the smallest Fargate memory for 2 vCPU
    base_memory_bytes: int = 59_183_104  # measured.json (replica): RSS of a warmed-up idle replica
    # Connections open at once, counting idle keep-alives, streams and health checks; a
    # request that arrives with this many open (its own counted) gets 503 and its connection
    # closes, as the server's --max-connections does (uvicorn's limit_concurrency).
    connection_limit: int = 1024  # Linux default soft limit on open files (ulimit -n)
    # The server's --idle-timeout-s default: a connection the balancer keeps for reuse stays
    # open, and counts against the limit, this long after its last request; 0 = none kept.
    keepalive_idle_s: float = 5.0
    # The balancer's health check of each replica (GET /healthz), as the lab's HAProxy runs
    # it (loadtest/harness/haproxy.py: inter 300 ms, fall 1, rise 1, timeout check 2 s): a
    # replica at its connection limit answers 503, one whose workers do not reach the check
    # within the timeout fails it; `fall` failures in a row take it out of rotation, `rise`
    # passes bring it back. An interval of 0 turns the checks off (a perfect balancer).
    health_check_interval_s: float = 0.3
    health_check_timeout_s: float = 2.0
    health_check_fall: int = 1
    health_check_rise: int = 1
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
        for name in (
            "replicas",
            "workers_per_replica",
            "connection_limit",
            "health_check_fall",
            "health_check_rise",
        ):
            value = getattr(self, name)
            require(
                isinstance(value, int) and value >= 1,
                f"{name} must be an integer >= 1, got {value!r}",
            )
        check_numbers(
            self,
            "vcpus_per_replica",
            "memory_gb_per_replica",
            "lb_idle_timeout_s",
            "health_check_timeout_s",
            positive=True,
        )
        check_numbers(
            self,
            "sse_keepalive_s",
            "held_call_bytes",
            "base_memory_bytes",
            "keepalive_idle_s",
            "health_check_interval_s",
            "shed_queue_threshold",
            "network_rtt_s",
            "network_rtt_cv",
        )
        check_fraction(self, "checkpoint_fraction")
        require(
            isinstance(self.worker_speed, int | float) and 0 < self.worker_speed <= 1,
            f"worker_speed must be in (0, 1], got {self.worker_speed!r}",
        )
        require(
            self.connection_limit >= 2,
            "connection_limit must be >= 2: a request is served only while the open "
            f"connections, its own counted, are fewer, got {self.connection_limit}",
        )
        require(
            self.lb_policy in BALANCER_POLICIES,
            f"lb_policy must be one of {', '.join(BALANCER_POLICIES)}, got {self.lb_policy!r}",
        )
        require(
            self.shed_policy in SHED_POLICIES,
            f"shed_policy must be one of {', '.join(SHED_POLICIES)}, got {self.shed_policy!r}",
        )
        require(
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
        check_numbers(self, "round_trip_s", "op_service_s", "ops_per_answer", "ecpus_per_op")
        check_numbers(self, "billed_gb")


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
        check_fraction(self, "persistent_share")
        check_numbers(self, "lease_s", "poll_interval_s", "ttl_s", positive=True)
        check_numbers(
            self,
            "work_s",
            "store_timeout_s",
            "record_bytes",
            "poll_request_bytes",
            "poll_response_bytes",
        )
        require(
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
        check_numbers(
            self, "seal_cpu_s", "open_cpu_s", "base_bytes", "bytes_per_answer", "checkpoint_bytes"
        )
        check_numbers(self, "reexecution_fraction")
        check_numbers(self, "state_ttl_s", positive=True)


@dataclass(frozen=True)
class CostParams:
    """Prices, in US dollars, of what a deployment consumes."""

    vcpu_hour_usd: float = 0.04048  # AWS Fargate on-demand, Linux/x86, us-east-1
    gb_hour_usd: float = 0.004445  # AWS Fargate on-demand, Linux/x86, us-east-1
    store_gb_hour_usd: float = 0.125  # ElastiCache Serverless (Redis OSS)
    store_usd_per_million_ecpu: float = 0.0034  # ElastiCache Serverless (Redis OSS)
    egress_usd_per_gb: float = 0.09  # AWS data transfer out, first 10 TB tier

    def __post_init__(self) -> None:
        check_numbers(
            self,
            "vcpu_hour_usd",
            "gb_hour_usd",
            "store_gb_hour_usd",
            "store_usd_per_million_ecpu",
            "egress_usd_per_gb",
        )

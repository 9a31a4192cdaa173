"""Load-test configuration: one dataclass with documented defaults.

Times are scaled down from the real world so a scenario fits in a minute on a laptop:
a user "thinks" for about a second instead of ten, and a drain timeout is seconds, not
minutes. The ratios that matter (drain timeout vs think time, fault time vs run time)
are what the scenarios keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ARCHITECTURES = ("mrtr", "sticky", "sse-store")
SCENARIOS = ("steady", "rolling-upgrade", "crash", "overload", "store-outage", "idle-timeout")
#: Faults a swarm injects on demand (`loadtest.swarm.lab_control`), from its web UI or on cue.
FAULTS = ("rolling-upgrade", "crash", "restart", "redis-outage")
#: Which form of the task methods a task call speaks; `both` picks one per call.
TASK_WIRES = ("seed", "extension", "both")
#: How the task store's Redis keeps its append-only file; `off`: no file at all.
TASK_STORE_FSYNC = ("everysec", "always", "off")


class LoadTestError(ValueError):
    """A setting that cannot work, said in one line."""


@dataclass
class LoadTestConfig:
    """One load-test run: the cluster, the swarm and the fault."""

    #: mrtr: round-robin LB, no store. sticky: cookie-sticky LB, legacy SSE, memory store.
    #: sse-store: round-robin LB, legacy SSE, answers routed through Redis.
    arch: str = "mrtr"
    #: steady, rolling-upgrade, crash, overload, store-outage (Redis killed, restarted) or
    #: idle-timeout (HAProxy cuts connections idle longer than `lb_idle_timeout_s`).
    scenario: str = "steady"
    #: Replicas behind the load balancer.
    replicas: int = 3
    #: Concurrent Locust users (each runs whole tool calls back to back).
    users: int = 20
    #: Users started per second.
    spawn_rate: float = 20.0
    #: Length of the swarm, seconds.
    duration_s: float = 20.0
    #: When the fault is injected, seconds after the swarm starts.
    fault_at_s: float = 5.0
    #: Median user think time per question (lognormal), scaled down from ~10 s.
    think_time_median_s: float = 0.5
    #: Spread (sigma of the underlying normal) of the lognormal think time.
    think_time_sigma: float = 0.6
    #: Drain timeout per replica during a rolling upgrade (HAProxy drain, then stop).
    drain_timeout_s: float = 2.0
    #: Time a crashed replica (or the killed store) stays down before it restarts.
    restart_delay_s: float = 2.0
    #: Seed of the fault's random choice (which replica crashes); None: a new choice each run.
    seed: int | None = None
    #: idle-timeout scenario: HAProxy's client and server timeout for the whole run, shorter
    #: than the think time, with the replicas' SSE keep-alive comments off, as a balancer
    #: with a short idle timeout (AWS ALB's default is 60 s) meets users who think longer.
    lb_idle_timeout_s: float = 1.0
    #: Demo tools the users call, with relative weights.
    tool_mix: dict[str, float] = field(
        default_factory=lambda: {
            "get_weather": 3.0,
            "update_work_item": 2.0,
            "link_accounts": 2.0,
            "ask_capital": 1.0,
        }
    )
    #: Task tools (`echo`, `provision_vm`) in the mix run as tasks, in this wire form.
    task_wire: str = "both"
    #: Simulated work of one `provision_vm` task (the server's default is 4 s).
    provision_s: float = 2.0
    #: A running task's lease on its replica (`--task-lease-s`; the server's default is
    #: 10 s): after a crash, another replica takes the task over once it lapses.
    task_lease_s: float = 2.0
    #: How long a client follows an acknowledged task before it counts the task as lost.
    task_timeout_s: float = 60.0
    #: `appendfsync` of the task store's Redis (append-only file): with `everysec` a Redis
    #: that dies alone keeps what it acknowledged (see `loadtest.harness.redis_server`); `always`
    #: keeps it even when the machine dies.
    #: `off` runs it without the file, to show what a volatile store loses in a restart.
    task_store_fsync: str = "everysec"
    #: Hash units per `crunch` call in the overload scenario.
    crunch_units: int = 200_000
    #: CPU milliseconds a `quote` call spends in each round (calibration's workload).
    quote_cpu_ms: float = 2.0
    #: In-flight requests above which a replica sheds `crunch` (overload scenario).
    shed_in_flight: int = 2
    #: Retries of one round (MRTR) or restarts of one call (legacy) before it counts as lost.
    max_retries: int = 8
    #: Legacy SSE: how long a replica waits for an answer before failing the call.
    answer_timeout_s: float = 30.0
    #: HAProxy: health-check interval, milliseconds.
    health_check_interval_ms: int = 300
    #: HAProxy: how long a health check may wait for its answer, milliseconds. HAProxy's
    #: own default interval; a check shorter than a loaded replica's queue marks the only
    #: replica down at high load and the clients see 503s, not the queue.
    health_check_timeout_ms: int = 2000
    #: Mean seconds between the starts of a user's calls, drawn exponentially: many users
    #: together offer a Poisson stream of `users / pacing_s` calls/s (open loop, as labsim
    #: assumes). 0 = closed loop: each call starts when the user's last one ends.
    pacing_s: float = 0.0
    #: Pin replicas and HAProxy to CPU 0 and Locust to CPU 1 (calibration, benchmarks).
    pin_cores: bool = False

    def __post_init__(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise LoadTestError(f"unknown architecture {self.arch!r}; choose from {ARCHITECTURES}")
        if self.scenario not in SCENARIOS:
            raise LoadTestError(f"unknown scenario {self.scenario!r}; choose from {SCENARIOS}")
        if self.replicas < 1:
            raise LoadTestError("at least one replica is needed")
        if self.users < 1 or self.spawn_rate <= 0:
            raise LoadTestError("users and spawn rate must be positive")
        if self.duration_s <= 0 or self.fault_at_s < 0:
            raise LoadTestError("duration must be positive and the fault time non-negative")
        if self.think_time_median_s < 0 or self.drain_timeout_s < 0 or self.pacing_s < 0:
            raise LoadTestError("think time, drain timeout and pacing must be non-negative")
        if self.task_wire not in TASK_WIRES or self.task_store_fsync not in TASK_STORE_FSYNC:
            raise LoadTestError(
                f"task wire is one of {TASK_WIRES}, task store fsync one of {TASK_STORE_FSYNC}"
            )
        if min(self.provision_s, self.task_lease_s, self.task_timeout_s) <= 0:
            raise LoadTestError("provision time, task lease and task timeout must be positive")
        if self.scenario == "idle-timeout" and self.think_time_median_s <= self.lb_idle_timeout_s:
            raise LoadTestError(
                f"idle-timeout needs users who think (--think-time, now "
                f"{self.think_time_median_s:g} s) longer than the idle timeout "
                f"({self.lb_idle_timeout_s:g} s)"
            )
        if not self.tool_mix or min(self.tool_mix.values()) < 0:
            raise LoadTestError("the tool mix needs at least one tool and no negative weight")

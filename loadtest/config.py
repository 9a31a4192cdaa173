"""Load-test configuration: one dataclass with documented defaults.

Times are scaled down from the real world so a scenario fits in a minute on a laptop:
a user "thinks" for about a second instead of ten, and a drain timeout is seconds, not
minutes. The ratios that matter (drain timeout vs think time, fault time vs run time)
are what the scenarios keep.

Each field is one setting, stated once: its default, its help and its flag
(`server.flags.setting`); the command line adds the flags a command takes from here. A
field without a flag says why in its help.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from server.flags import named_values, setting

#: The text argument of each demo tool that `--argument-bytes` pads.
PADDED_ARGUMENTS = {"get_weather": "location", "ask_capital": "country"}

ARCHITECTURES = ("mrtr", "sticky", "sse-store")
SCENARIOS = ("steady", "rolling-upgrade", "crash", "overload", "store-outage", "idle-timeout")
#: Faults a swarm injects on demand (`loadtest.labtab.control`), from its web UI or on cue.
FAULTS = ("rolling-upgrade", "crash", "restart", "redis-outage")
#: Which form of the task methods a task call speaks; `both` picks one per call.
TASK_WIRES = ("seed", "extension", "both")
#: How the task store's Redis keeps its append-only file; `off`: no file at all.
TASK_STORE_FSYNC = ("everysec", "always", "off")
#: How the CPU of a CPU-bound tool call is drawn (as labsim's `ServiceTime` kinds).
TOOL_CPU_KINDS = ("deterministic", "exponential", "lognormal")


class LoadTestError(ValueError):
    """A setting that cannot work, said in one line."""


def tool_mix_of(spec: str) -> dict[str, float]:
    """The tool mix `name=weight,name=weight` says (a bare name weighs 1)."""
    mix = {}
    for name, weight in named_values(spec).items():
        try:
            mix[name] = float(weight) if weight else 1.0
        except ValueError:
            raise argparse.ArgumentTypeError(f"tool weight {weight!r} is not a number") from None
    return mix


def _default_tool_mix() -> dict[str, float]:
    return {"get_weather": 3.0, "update_work_item": 2.0, "link_accounts": 2.0, "ask_capital": 1.0}


@dataclass
class LoadTestConfig:
    """One load-test run: the cluster, the swarm and the fault."""

    arch: str = setting(
        "mrtr",
        help="the cluster's architecture and the users' client: mrtr (round-robin balancer, "
        "no store), sticky (cookie-sticky balancer, legacy SSE, answers kept in the "
        "replica's memory) or sse-store (round-robin, legacy SSE, answers routed through "
        "Redis)",
        choices=ARCHITECTURES,
    )
    scenario: str = setting(
        "steady",
        help="steady; rolling-upgrade; crash (a replica chosen with --seed killed, restarted); "
        "overload; store-outage (Redis killed, restarted); idle-timeout (HAProxy cuts "
        "connections idle longer than --lb-idle-timeout, keep-alive comments off)",
        choices=SCENARIOS,
    )
    replicas: int = setting(3, help="replicas of the lab's cluster behind HAProxy")
    users: int = setting(
        20,
        help="concurrent users, each running whole tool calls back to back (a swarm with its "
        "web UI starts them at once when this is given; without it, it waits for START in "
        "the web UI's form)",
    )
    spawn_rate: float = setting(20.0, help="users started per second")
    duration_s: float = setting(
        20.0,
        flag="--duration",
        help="seconds the users call for (a swarm with its web UI runs until stopped)",
    )
    fault_at_s: float = setting(
        5.0,
        flag="--fault-at",
        help="seconds after the users start when the fault comes (a swarm's: only with "
        "--fault, headless)",
    )
    think_time_median_s: float = setting(
        0.5,
        aliases=("--think-time",),
        help="median seconds a user thinks before answering (lognormal; scaled down from "
        "about 10 s)",
    )
    think_time_sigma: float = setting(
        0.6,
        aliases=("--think-sigma",),
        help="spread (sigma of the underlying normal) of the lognormal think time",
    )
    drain_timeout_s: float = setting(
        2.0,
        flag="--drain-timeout",
        help="seconds a rolling upgrade waits for each replica to drain (HAProxy drain, then stop)",
    )
    restart_delay_s: float = setting(
        2.0,
        help="seconds a crashed replica (or the killed store) stays down before it restarts; "
        "no flag: the crash and store-outage scenarios keep it, so that their runs compare",
        cli=False,
    )
    seed: int | None = setting(
        None, help="seed of the fault's choice of replica; none draws a new one each run"
    )
    #: A balancer with a short idle timeout (AWS ALB's default is 60 s) meets users who
    #: think longer: the replicas' SSE keep-alive comments are off in this scenario.
    lb_idle_timeout_s: float = setting(
        1.0,
        flag="--lb-idle-timeout",
        help="idle-timeout: HAProxy's client and server timeout, s, for the whole run "
        "(shorter than --think-time-median-s)",
    )
    tool_mix: dict[str, float] = setting(
        default_factory=_default_tool_mix,
        flag="--tools",
        metavar="NAME=WEIGHT,...",
        parse=tool_mix_of,
        help="the demo tools the users call, with relative weights (a bare name weighs 1); "
        "task tools (echo, provision_vm) run as tasks; the rounds tool is named by its shape, "
        "rounds/ROUNDSxQUESTIONS (rounds/3x2: three rounds, two questions in each but the last)",
    )
    task_wire: str = setting(
        "both",
        help="the wire form of the task methods a task call speaks (both: one picked per call)",
        choices=TASK_WIRES,
    )
    provision_s: float = setting(
        2.0,
        help="seconds of simulated work in one provision_vm task (the server's default is 4 s); "
        "no flag: scaled down like the think time",
        cli=False,
    )
    task_lease_s: float = setting(
        2.0,
        help="a running task's lease on its replica (the server's --task-lease-s, 10 s by "
        "default): after a crash, another replica takes the task over once it lapses; no "
        "flag: scaled down like the think time",
        cli=False,
    )
    task_timeout_s: float = setting(
        60.0,
        help="seconds a client follows an acknowledged task before it counts the task as "
        "lost; no flag: a bound on a hang, not a setting of the experiment",
        cli=False,
    )
    #: With `everysec` a Redis that dies alone keeps what it acknowledged (see
    #: `loadtest.harness.redis_server`); `always` keeps it even when the machine dies.
    task_store_fsync: str = setting(
        "everysec",
        help="appendfsync of the task store's append-only file (off: a volatile store, to "
        "show what a restart loses)",
        choices=TASK_STORE_FSYNC,
    )
    crunch_units: int = setting(
        200_000,
        help="hash units per crunch call in the overload scenario; no flag: sized with "
        "shed_in_flight so that a replica sheds",
        cli=False,
    )
    tool_cpu_ms: float = setting(
        2.0,
        metavar="MS",
        help="CPU milliseconds each round of the lab's CPU-bound demo tools spends, on the "
        "mean: quote's cpu_ms (one question, two rounds), rounds' cpu_ms_per_round and, "
        "outside the overload scenario, crunch's units sized to as much hashing (one round)",
    )
    tool_cpu_cv: float = setting(
        0.0,
        help="spread (std / mean) of --tool-cpu-ms: each call draws its own from "
        "--tool-cpu-kind (0: every call spends the mean)",
    )
    tool_cpu_kind: str = setting(
        "deterministic",
        help="distribution each call's --tool-cpu-ms is drawn from",
        choices=TOOL_CPU_KINDS,
    )
    argument_bytes: int = setting(
        0,
        metavar="N",
        help="pad each call's text argument (get_weather's location, ask_capital's country) "
        "to about N bytes, as a tool whose callers send documents: a held legacy call keeps "
        "them, MRTR sends them again with each round (0: the usual few bytes)",
    )
    shed_in_flight: int = setting(
        2,
        help="in-flight requests above which a replica sheds crunch (overload scenario); no "
        "flag: sized with crunch_units",
        cli=False,
    )
    max_retries: int = setting(
        8,
        help="retries of one round (MRTR) or restarts of one call (legacy) before it counts "
        "as lost",
    )
    retry_backoff_s: float = setting(
        0.05,
        flag="--retry-backoff",
        metavar="S",
        help="seconds a user's client waits before it sends a refused round again (or starts "
        "a cut legacy call again), doubling at each retry up to --retry-backoff-max",
    )
    retry_backoff_max_s: float = setting(
        0.5, flag="--retry-backoff-max", metavar="S", help="the longest wait between two retries"
    )
    answer_timeout_s: float = setting(
        30.0,
        aliases=("--answer-timeout",),
        metavar="S",
        help="seconds a legacy replica waits for an answer before it fails the call (the "
        "replicas' own --answer-timeout-s; the simulated twin takes it too)",
    )
    never_answer_share: float = setting(
        0.0,
        flag="--never-answer",
        metavar="SHARE",
        help="share of calls whose user never answers: an MRTR call ends at its first "
        "question and holds nothing; a legacy call keeps its stream open until the replica's "
        "--answer-timeout-s; such calls count as abandoned, not in latency or completion",
    )
    rate_per_s: float = setting(
        0.0,
        flag="--rate",
        metavar="PER_S",
        help="open loop: calls started per second at exponential intervals (Poisson), each by "
        "a user of its own who makes that one call, however slow the replicas are (--users "
        "is then ignored); 0: --users users each calling back to back (closed loop)",
    )
    max_connections: int | None = setting(
        None,
        metavar="N",
        help="each replica's --max-connections: connections (and requests) it serves at "
        "once, beyond which it answers 503 at once, health checks and held legacy streams "
        "included (default: the server's own)",
    )
    cpu_workers: int | None = setting(
        None,
        metavar="N",
        help="each replica's --cpu-workers: processes running CPU-heavy tool work off its "
        "event loop (default: the server's own)",
    )
    cpu_inline_max_ms: float | None = setting(
        None,
        metavar="MS",
        help="each replica's --cpu-inline-max-ms: tool work up to this runs on the event loop, "
        "more in the CPU workers (default: the server's own)",
    )
    health_check_interval_ms: int = setting(
        300, help="HAProxy's health-check interval; no flag: the lab cluster's own", cli=False
    )
    #: HAProxy's own default interval; a check shorter than a loaded replica's queue marks
    #: the only replica down at high load and the clients see 503s, not the queue.
    health_check_timeout_ms: int = setting(
        2000,
        help="how long HAProxy's health check waits for its answer; no flag: the lab cluster's own",
        cli=False,
    )
    #: Many users together offer a Poisson stream of `users / pacing_s` calls/s (open loop,
    #: as labsim assumes).
    pacing_s: float = setting(
        0.0,
        help="mean seconds between the starts of a user's calls, drawn exponentially (0: "
        "each call starts when the user's last one ends); no flag: the calibration's "
        "open-loop workload sets it",
        cli=False,
    )
    pin_cores: bool = setting(
        False,
        help="pin the lab's replicas and HAProxy to CPU 0 and the users (Locust) to CPU 1, "
        "so that the load the users make does not take the replicas' core (the calibration "
        "and the measurements set it); left unpinned on a machine without both CPUs",
    )

    @property
    def locust_users(self) -> int:
        """The Locust users a run starts: `users`, or with `--rate` one, the arrivals."""
        return 1 if self.rate_per_s else self.users

    @property
    def stop_timeout_s(self) -> int:
        """How long calls still running when the time is up may take to finish, so that
        they are not counted as lost: 20 median think times (10 s at least), and where
        users who never answer hold legacy streams, the replicas' answer timeout on top."""
        timeout_s = max(10.0, self.think_time_median_s * 20)
        if self.never_answer_share and self.arch != "mrtr":
            timeout_s += self.answer_timeout_s
        return int(timeout_s)

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
                f"idle-timeout needs users who think (--think-time-median-s, now "
                f"{self.think_time_median_s:g} s) longer than the idle timeout "
                f"({self.lb_idle_timeout_s:g} s)"
            )
        if not self.tool_mix or min(self.tool_mix.values()) < 0:
            raise LoadTestError("the tool mix needs at least one tool and no negative weight")
        if self.rate_per_s < 0 or self.tool_cpu_ms < 0 or self.tool_cpu_cv < 0:
            raise LoadTestError("--rate, --tool-cpu-ms and --tool-cpu-cv must be non-negative")
        padded = [tool for tool in self.tool_mix if tool not in PADDED_ARGUMENTS]
        if self.argument_bytes < 0 or (self.argument_bytes and padded):
            raise LoadTestError(
                "--argument-bytes is a size >= 0 and pads only "
                f"{', '.join(PADDED_ARGUMENTS)}; the mix also has {', '.join(padded)}"
            )
        if self.tool_cpu_kind not in TOOL_CPU_KINDS:
            raise LoadTestError(f"--tool-cpu-kind is one of {TOOL_CPU_KINDS}")
        if not 0 <= self.never_answer_share < 1:
            raise LoadTestError("--never-answer is a share in [0, 1)")
        if self.max_connections is not None and self.max_connections < 2:
            raise LoadTestError("--max-connections must leave room for a health check: at least 2")
        if min(self.retry_backoff_s, self.retry_backoff_max_s, self.max_retries) < 0:
            raise LoadTestError("retries and their backoff must be non-negative")
        if self.answer_timeout_s <= 0:
            raise LoadTestError("--answer-timeout-s must be positive")

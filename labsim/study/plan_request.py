"""The architect's question to `labsim plan`: a workload, an SLO and the shape of a replica.

Each field of `PlanRequest` states its default, its source and its help once; the
`plan` command makes one flag per field from them (`labsim.cli.plan`), under the
field's name (`--think-time-median-s`) unless the field names the flag users know (`--rate`).
The tools and their shares are one flag, `--tool-mix NAME=SHARE,...`. The work of a
round (`--round-cpu-ms`, `--round-cpu-cv`, `--round-cpu-kind`) defaults to what the
parameter file measured; a field left at None takes it from there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from labsim.model.checks import ParameterError, number_or_text
from labsim.model.demand import (
    SERVICE_TIME_KINDS,
    ClientParams,
    ServiceTime,
    WorkloadParams,
    stated_round,
)
from labsim.model.deployment import ClusterParams
from labsim.model.params import SimParams
from labsim.model.tools import TOOLS, SimTool, target_tool
from labsim.model.workload import MAX_CALLS_PER_RUN
from server.flags import flags_of, named_values, setting

#: The most replicas a plan may walk to, and the most runs it may make of one size: past
#: these a plan is no longer a question for one machine.
MAX_FLEET = 4096
MAX_RUNS_PER_SIZE = 100
#: The fields of the round a user states (`--round-cpu-*`), which `labsim compare` takes too.
STATED_ROUND = ("round_cpu_ms", "round_cpu_cv", "round_cpu_kind")


def flag_of(name: str) -> str:
    """The `labsim plan` flag that sets request field `name`."""
    return flags_of(PlanRequest)[name]


def parse_tool_mix(text: str) -> dict[str, tuple[Any, ...]]:
    """`NAME=WEIGHT,...` as the `tools` and `tool_mix` fields: weights as shares of the
    calls (`book_room=3,transfer=1` is 0.75 and 0.25; shares that sum to 1 stay as they
    are). A weight that is no number stays text, and the request refuses it."""
    mix: dict[str, Any] = {}
    for name, share in named_values(text).items():
        mix[name] = number_or_text(share)
    weights = list(mix.values())
    if all(isinstance(w, int | float) and w >= 0 for w in weights) and sum(weights) > 0:
        total = sum(weights)
        if not math.isclose(total, 1.0):
            mix = {name: weight / total for name, weight in mix.items()}
    return {"tools": tuple(mix), "tool_mix": tuple(mix.values())}


def tool_mix_text(tools: tuple[str, ...], tool_mix: tuple[float, ...]) -> str:
    """The tools and their shares as `--tool-mix` writes them."""
    return ",".join(f"{name}={share:g}" for name, share in zip(tools, tool_mix, strict=True))


@dataclass(frozen=True)
class PlanRequest:
    """The architect's question: a workload, an SLO and the shape of one replica."""

    rate_per_s: float = setting(
        20.0, help="tool calls arriving per second (Poisson)", flag="--rate", metavar="PER_S"
    )
    think_time_median_s: float = setting(
        WorkloadParams.think_time_median_s,
        help="median time a user takes over one question (s)",
        aliases=("--think-median-s",),
    )
    slo_p95_ms: float = setting(
        250.0,
        help="SLO: p95 server latency of a call (think time excluded) over every call whose "
        "user answers; a failed or lost call counts as a miss",
    )
    memory_gb_per_replica: float = setting(
        ClusterParams.memory_gb_per_replica, help="memory of one replica (GB, as Fargate sells it)"
    )
    connection_limit: int = setting(
        ClusterParams.connection_limit,
        help="the server's --max-connections: connections a replica keeps open at once (idle "
        "keep-alives, held streams and health checks count); beyond, 503",
    )
    think_time_sigma: float = setting(
        WorkloadParams.think_time_sigma,
        help="lognormal shape of the think time",
        aliases=("--think-sigma",),
    )
    tools: tuple[str, ...] = setting(
        WorkloadParams.tools,
        help="NAME=WEIGHT,... of the simulated tools (weights as shares of the calls): the demo "
        "tools, or the tools the --params file measured, by their own names",
        flag="--tool-mix",
        parse=parse_tool_mix,
        format=tool_mix_text,
    )
    tool_mix: tuple[float, ...] = setting(
        WorkloadParams.tool_mix,
        help="the share of calls to each tool",
        flag="--tool-mix",
        parse=parse_tool_mix,
        format=tool_mix_text,
    )
    never_answer_share: float = setting(
        WorkloadParams.never_answer_share,
        help="share of users who never answer",
        flag="--never-answer",
    )
    slo_completed_share: float = setting(
        0.999,
        help="SLO: share of the calls whose user answers that complete",
        flag="--slo-completed",
    )
    vcpus_per_replica: float = setting(
        ClusterParams.vcpus_per_replica,
        help="vCPUs per replica, one worker each (0.25 or 0.5: one worker on that share)",
        flag="--vcpus",
    )
    # Assumption: a usual target-tracking target.
    target_cpu_utilization: float = setting(
        0.7, help="CPU utilisation to plan for", flag="--target-cpu"
    )
    round_cpu_ms: float | None = setting(
        None,
        help="server work per round (ms): a request's whole time on a replica's worker, "
        "parsing, tool and answer",
        metavar="MS",
    )
    round_cpu_cv: float | None = setting(
        None,
        help="spread of the server work per round (std / mean)",
        metavar="CV",
    )
    round_cpu_kind: str | None = setting(
        None,
        help="distribution of the server work per round",
        choices=SERVICE_TIME_KINDS,
    )
    answer_timeout_s: float = setting(
        ClientParams.answer_timeout_s,
        help="a question unanswered this long drops the call (s)",
    )
    replications: int = setting(3, help="seeded runs per fleet size, at first")
    max_replications: int = setting(
        12, help="most runs per fleet size, added while a confidence interval straddles the SLO"
    )
    measure_s: float = setting(300.0, help="simulated seconds measured after the warm-up")
    seed: int = setting(0, help="seed the replications derive from")
    max_replicas: int = setting(512, help="largest fleet the plan walks to")

    def __post_init__(self) -> None:
        positive = (
            "rate_per_s",
            "think_time_median_s",
            "slo_p95_ms",
            "measure_s",
            "answer_timeout_s",
        )
        for name in positive:
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value > 0 and value < float("inf")):
                raise ParameterError(f"{flag_of(name)} must be a number > 0, got {value!r}")
        if not 0 < self.target_cpu_utilization <= 1:
            raise ParameterError(f"{flag_of('target_cpu_utilization')} must be in (0, 1]")
        if not 0 < self.slo_completed_share <= 1:
            raise ParameterError(f"{flag_of('slo_completed_share')} must be in (0, 1]")
        self._check_counts()
        self._check_size()
        if self.round_cpu_ms is not None and not self.round_cpu_ms > 0:
            raise ParameterError(f"--round-cpu-ms must be > 0, got {self.round_cpu_ms!r}")
        if self.round_cpu_cv is not None and not self.round_cpu_cv >= 0:
            raise ParameterError(f"--round-cpu-cv must be >= 0, got {self.round_cpu_cv!r}")
        if self.round_cpu_kind is not None and self.round_cpu_kind not in SERVICE_TIME_KINDS:
            raise ParameterError(
                f"--round-cpu-kind must be one of {', '.join(SERVICE_TIME_KINDS)}, "
                f"got {self.round_cpu_kind!r}"
            )
        if not all(isinstance(share, int | float) for share in self.tool_mix):
            raise ParameterError(f"tool shares must be numbers, got {self.tool_mix!r}")
        # The workload's own checks: shares summing to 1, a sane think time. A name the
        # demo catalogue lacks may be a tool of the parameter file, which the plan checks
        # when it reads the file (`labsim.study.plan_tools.check_names`).
        others = tuple(target_tool(name, 1) for name in self.tools if name not in TOOLS)
        try:
            WorkloadParams(**self.workload_fields(), target_tools=others)
        except ParameterError as error:
            raise ParameterError(
                f"{error} (--tool-mix, --think-time-sigma, --never-answer)"
            ) from None

    def _check_counts(self) -> None:
        bounds = {
            "replications": (1, MAX_RUNS_PER_SIZE),
            "max_replications": (self.replications, MAX_RUNS_PER_SIZE),
            "max_replicas": (1, MAX_FLEET),
            "connection_limit": (2, 10**7),
        }
        for name, (low, high) in bounds.items():
            value = getattr(self, name)
            if not (isinstance(value, int) and low <= value <= high):
                raise ParameterError(
                    f"{flag_of(name)} must be a whole number from {low} to {high}, got {value!r}"
                )

    def _check_size(self) -> None:
        """Refuse a run too large for memory by the flags that make it so, before any run."""
        calls = self.rate_per_s * (self.warmup_s + self.measure_s)
        if calls > MAX_CALLS_PER_RUN:
            raise ParameterError(
                f"--rate {self.rate_per_s:g} over the {self.warmup_s:g} s warm-up and "
                f"--measure-s {self.measure_s:g} asks for about {calls:.3g} simulated calls in "
                f"each run; a run keeps every call (about 2 KB each), so at most "
                f"{MAX_CALLS_PER_RUN:,}: lower --rate or --measure-s"
            )

    @property
    def warmup_s(self) -> float:
        """Simulated time before the measurement: held calls fill up within one answer
        timeout, and five minutes are enough for the rest."""
        return min(300.0, self.answer_timeout_s)

    def workload_fields(self) -> dict[str, Any]:
        """The `WorkloadParams` fields this request sets."""
        return {
            "arrival_rate_per_s": self.rate_per_s,
            "think_time_median_s": self.think_time_median_s,
            "think_time_sigma": self.think_time_sigma,
            "tools": self.tools,
            "tool_mix": self.tool_mix,
            "never_answer_share": self.never_answer_share,
        }

    @property
    def workers(self) -> int:
        """Worker slots per replica: one per vCPU, and one below a vCPU."""
        return max(1, round(self.vcpus_per_replica))

    @property
    def worker_speed(self) -> float:
        """The share of a CPU each worker gets: all of one, or the fraction of a replica
        smaller than a vCPU."""
        return min(1.0, self.vcpus_per_replica)

    def whole_round(self, measured: ServiceTime) -> ServiceTime:
        """The server work per round: what the request states, the rest as `measured`
        (`labsim.model.demand.stated_round`)."""
        return stated_round(measured, self.round_cpu_ms, self.round_cpu_cv, self.round_cpu_kind)

    def params(
        self,
        base: SimParams,
        replicas: int,
        tool_cpu: ServiceTime,
        overhead_s: float,
        target_tools: tuple[SimTool, ...] = (),
    ) -> SimParams:
        """The simulated deployment of `replicas` replicas under this workload: `base` (the
        parameter file and `--set`) with what the request says put in, and the target's
        tools of the mix as measured."""
        return base.with_overrides(
            **self.workload_fields(),
            target_tools=target_tools,
            round_cpu=tool_cpu,
            request_overhead_s=overhead_s,
            answer_timeout_s=self.answer_timeout_s,
            replicas=replicas,
            workers_per_replica=self.workers,
            worker_speed=self.worker_speed,
            vcpus_per_replica=self.vcpus_per_replica,
            memory_gb_per_replica=self.memory_gb_per_replica,
            connection_limit=self.connection_limit,
            warmup_s=self.warmup_s,
            horizon_s=self.warmup_s + self.measure_s,
            sample_every_s=10.0,
        )


#: Parameters the request sets (`PlanRequest.params`), and the flag that sets each: a
#: `--set` of one of them is refused, so that no setting is silently overwritten.
SET_BY_REQUEST = {
    "arrival_rate_per_s": "--rate",
    "think_time_median_s": "--think-time-median-s",
    "think_time_sigma": "--think-time-sigma",
    "tools": "--tool-mix",
    "tool_mix": "--tool-mix",
    "target_tools": "--params (the file's tools)",
    "never_answer_share": "--never-answer",
    "round_cpu": "--round-cpu-ms, --round-cpu-cv, --round-cpu-kind",
    "answer_timeout_s": "--answer-timeout-s",
    "replicas": "the plan itself",
    "workers_per_replica": "--vcpus",
    "worker_speed": "--vcpus",
    "vcpus_per_replica": "--vcpus",
    "memory_gb_per_replica": "--memory-gb-per-replica",
    "connection_limit": "--connection-limit",
    "warmup_s": "--answer-timeout-s",
    "horizon_s": "--measure-s",
    "sample_every_s": "the plan itself",
}

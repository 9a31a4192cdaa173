"""The architect's question to `labsim plan`: a workload, an SLO and the shape of a replica.

Each field of `PlanRequest` states its default, its source and its help once; the
`plan` command makes one flag per field from them (`labsim.cli.plan`), under the
field's name (`--think-median-s`) unless the field names the flag users know (`--rate`).
The tools and their shares are one flag, `--tool-mix NAME=SHARE,...`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from labsim.model.checks import ParameterError
from labsim.model.cost import BYTES_PER_GB
from labsim.model.demand import WorkloadParams
from labsim.model.params import SimParams


def setting(default: Any, help: str, flag: str | None = None) -> Any:
    """A request field: its default, what it means (the flag's help) and, when it is not
    `--field-name`, the flag of `labsim plan` that sets it."""
    metadata = {"help": help} if flag is None else {"help": help, "flag": flag}
    return dataclasses.field(default=default, metadata=metadata)


def parse_tool_mix(text: str) -> dict[str, tuple[Any, ...]]:
    """`NAME=SHARE,...` as the `tools` and `tool_mix` fields (a share that is no number
    stays text, and the request refuses it)."""
    mix: dict[str, Any] = {}
    for pair in text.split(","):
        name, _, share = pair.partition("=")
        mix[name.strip()] = _number(share.strip())
    return {"tools": tuple(mix), "tool_mix": tuple(mix.values())}


def tool_mix_text(tools: tuple[str, ...], tool_mix: tuple[float, ...]) -> str:
    """The tools and their shares as `--tool-mix` writes them."""
    return ",".join(f"{name}={share:g}" for name, share in zip(tools, tool_mix, strict=True))


def _number(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


@dataclass(frozen=True)
class PlanRequest:
    """The architect's question: a workload, an SLO and the shape of one replica."""

    rate_per_s: float = setting(20.0, "tool calls arriving per second", "--rate")
    think_median_s: float = setting(10.0, "median time a user takes over one question (s)")
    slo_p95_ms: float = setting(250.0, "SLO: p95 server latency of a call, think time excluded")
    memory_gb_per_replica: float = setting(4.0, "memory of one replica (GB)")
    connection_limit: int = setting(1024, "open connections a replica accepts")
    # As WorkloadParams: a lognormal, p95 about 12x the median.
    think_sigma: float = setting(1.5, "lognormal shape of the think time")
    tools: tuple[str, ...] = setting(
        WorkloadParams.tools, "NAME=SHARE,... of the simulated tools", "--tool-mix"
    )
    tool_mix: tuple[float, ...] = setting(
        WorkloadParams.tool_mix, "the share of calls to each tool", "--tool-mix"
    )
    # As WorkloadParams: the seed's users may never answer.
    never_answer_fraction: float = setting(
        0.05, "share of users who never answer", "--never-answer"
    )
    slo_completed_fraction: float = setting(
        0.99, "SLO: share of the answered calls that complete", "--slo-completed"
    )
    # AWS Fargate task size 2 vCPU, one worker per whole vCPU.
    vcpus_per_replica: float = setting(2.0, "vCPUs per replica", "--vcpus")
    # Assumption: a usual target-tracking target.
    target_cpu_utilization: float = setting(0.7, "CPU utilisation to plan for", "--target-cpu")
    # measured.json: RSS of a warmed-up idle replica.
    base_memory_bytes: int = setting(52_424_704, "memory of an idle replica (bytes)")
    replications: int = setting(3, "seeded runs per fleet size")
    measure_s: float = setting(300.0, "simulated seconds measured after the warm-up")
    seed: int = setting(0, "seed the replications derive from")
    max_replicas: int = setting(512, "largest fleet the search tries")

    def __post_init__(self) -> None:
        for name in ("rate_per_s", "think_median_s", "slo_p95_ms", "measure_s"):
            if not getattr(self, name) > 0:
                raise ParameterError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not 0 < self.target_cpu_utilization <= 1:
            raise ParameterError("target_cpu_utilization must be in (0, 1]")
        if not 0 < self.slo_completed_fraction <= 1:
            raise ParameterError("slo_completed_fraction must be in (0, 1]")
        if self.memory_gb_per_replica * BYTES_PER_GB <= self.base_memory_bytes:
            raise ParameterError(
                f"a replica needs more than its base {self.base_memory_bytes / 1e6:.0f} MB "
                f"of memory, got {self.memory_gb_per_replica} GB"
            )
        if not (isinstance(self.replications, int) and self.replications >= 1):
            raise ParameterError("replications must be an integer >= 1")
        if not all(isinstance(share, int | float) for share in self.tool_mix):
            raise ParameterError(f"tool shares must be numbers, got {self.tool_mix!r}")
        # The workload's own checks: known tools, shares summing to 1, a sane think time.
        WorkloadParams(**self.workload_fields())

    def workload_fields(self) -> dict[str, Any]:
        """The `WorkloadParams` fields this request sets."""
        return {
            "arrival_rate_per_s": self.rate_per_s,
            "think_median_s": self.think_median_s,
            "think_sigma": self.think_sigma,
            "tools": self.tools,
            "tool_mix": self.tool_mix,
            "never_answer_fraction": self.never_answer_fraction,
        }

    @property
    def workers(self) -> int:
        """Worker slots per replica: one per whole vCPU."""
        return max(1, round(self.vcpus_per_replica))

    def params(self, base: SimParams, replicas: int) -> SimParams:
        """The simulated deployment of `replicas` replicas under this workload."""
        warmup_s = min(300.0, base.client.answer_timeout_s)
        return base.with_overrides(
            **self.workload_fields(),
            replicas=replicas,
            workers_per_replica=self.workers,
            vcpus_per_replica=self.vcpus_per_replica,
            memory_gb_per_replica=self.memory_gb_per_replica,
            connection_limit=self.connection_limit,
            warmup_s=warmup_s,
            horizon_s=warmup_s + self.measure_s,
            sample_every_s=10.0,
        )

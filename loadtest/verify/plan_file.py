"""A plan as `python -m labsim plan --json P` writes it, read for checking live.

Only what the live check needs is read, and each of it is checked: a plan missing a field
is refused with that field's name. The workload (arrivals, think time, tools, users who
never answer, the server work per round), the SLO and the replica's limits come from
`request`; how the simulated replica split a round (the request's overhead and the tool's
work), how many workers it had, and how its client retried come from `params`; each
architecture's answer (its fleet and whether it meets, and one replica fewer) from
`architectures`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labsim.model.checks import is_number
from labsim.model.shapes import BYTES_PER_SHAPE_GB
from loadtest.config import ARCHITECTURES, TOOL_CPU_KINDS, LoadTestError


@dataclass(frozen=True)
class RoundWork:
    """Server work per round, a distribution: its mean (ms), spread (std / mean) and kind."""

    mean_ms: float
    cv: float
    kind: str


@dataclass(frozen=True)
class Workload:
    """What the plan's users do: the plan's request, and how its model's client retried."""

    rate_per_s: float
    think_time_median_s: float
    think_time_sigma: float
    tools: dict[str, float]
    never_answer_share: float
    answer_timeout_s: float
    #: The whole round, as the plan states it, and its parts in the model.
    round_work: RoundWork
    tool_work: RoundWork
    overhead_ms: float
    workers_per_replica: int
    #: How fast a worker runs against a whole vCPU (a replica of half a vCPU: 0.5).
    worker_speed: float
    retry_backoff_s: float
    max_retries: int
    #: Mean JSON-RPC request body per round (a tool whose callers send documents: large).
    request_bytes: float = 0.0


@dataclass(frozen=True)
class Slo:
    """What a fleet must do, and the limits of one replica."""

    p95_ms: float
    completed_share: float
    connection_limit: int
    memory_bytes: float
    target_cpu_utilization: float


@dataclass(frozen=True)
class Answer:
    """One architecture's answer: its fleet and whether it meets; one replica fewer (its
    size and whether it meets), or why there is none; or, with no fleet, why."""

    arch: str
    replicas: int | None
    meets: bool
    one_fewer: int | None
    one_fewer_meets: bool | None
    reason: str = ""
    p95_ms: float | None = None
    completed_share: float | None = None
    one_fewer_p95_ms: float | None = None
    one_fewer_completed_share: float | None = None


@dataclass(frozen=True)
class Plan:
    """A plan read from its file: the command that made it, the workload, the SLO and the
    answers by architecture."""

    path: str
    command: str
    workload: Workload
    slo: Slo
    answers: dict[str, Answer]


def read_plan(path: str | Path) -> Plan:
    """The plan in `path`, checked; a `LoadTestError` names what is missing or wrong."""
    try:
        document = json.loads(Path(path).read_text())
    except OSError as error:
        raise LoadTestError(f"cannot read the plan {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise LoadTestError(f"the plan {path} is not JSON: {error}") from None
    return parse_plan(document, str(path))


def parse_plan(document: Any, source: str = "plan") -> Plan:
    """A decoded plan document, checked."""
    plan = _Fields(document, source)
    request = plan.section("request")
    params = plan.section("params")
    workload, client, cluster = (
        _Fields(params.get("workload"), f"{source}: params.workload"),
        _Fields(params.get("client"), f"{source}: params.client"),
        _Fields(params.get("cluster"), f"{source}: params.cluster"),
    )
    tools = request.get("tools")
    mix = request.get("tool_mix")
    if not isinstance(tools, list) or not isinstance(mix, list) or len(tools) != len(mix):
        raise LoadTestError(f"{source}: request.tools and request.tool_mix must pair up")
    whole = RoundWork(
        request.number("round_cpu_ms"),
        request.number("round_cpu_cv"),
        request.choice("round_cpu_kind", TOOL_CPU_KINDS),
    )
    tool_part = _Fields(workload.get("round_cpu"), f"{source}: params.workload.round_cpu")
    overhead_ms = workload.number("request_overhead_s") * 1e3
    loaded = Workload(
        rate_per_s=request.number("rate_per_s", positive=True),
        think_time_median_s=request.number("think_time_median_s"),
        think_time_sigma=request.number("think_time_sigma"),
        tools={str(name): float(share) for name, share in zip(tools, mix, strict=True)},
        never_answer_share=request.number("never_answer_share"),
        answer_timeout_s=request.number("answer_timeout_s", positive=True),
        round_work=whole,
        tool_work=RoundWork(
            tool_part.number("mean_s") * 1e3,
            tool_part.number("cv"),
            tool_part.choice("kind", TOOL_CPU_KINDS),
        ),
        overhead_ms=overhead_ms,
        workers_per_replica=int(cluster.number("workers_per_replica", positive=True)),
        # Plans from before replicas of less than a vCPU were sold have no speed: whole.
        worker_speed=cluster.number("worker_speed", positive=True)
        if "worker_speed" in cluster.value
        else 1.0,
        retry_backoff_s=client.number("retry_backoff_s"),
        max_retries=int(client.number("max_retries")),
        # Plans from before a parameter file could state it carry the lab's own.
        request_bytes=workload.number("request_bytes") if "request_bytes" in workload.value else 0,
    )
    slo = Slo(
        p95_ms=request.number("slo_p95_ms", positive=True),
        completed_share=request.number("slo_completed_share", positive=True),
        connection_limit=int(request.number("connection_limit", positive=True)),
        memory_bytes=request.number("memory_gb_per_replica", positive=True) * BYTES_PER_SHAPE_GB,
        target_cpu_utilization=request.number("target_cpu_utilization", positive=True),
    )
    answers = plan.section("architectures")
    unknown = sorted(set(answers) - set(ARCHITECTURES))
    if unknown or not answers:
        raise LoadTestError(
            f"{source}: architectures must name some of {', '.join(ARCHITECTURES)}"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )
    return Plan(
        path=source,
        command=str(document.get("command", "")),
        workload=loaded,
        slo=slo,
        answers={
            arch: _answer(arch, _Fields(answers[arch], f"{source}: architectures.{arch}"))
            for arch in ARCHITECTURES
            if arch in answers
        },
    )


def _answer(arch: str, fields: _Fields) -> Answer:
    replicas = fields.get("replicas")
    meets = fields.get("meets")
    if not isinstance(meets, bool):
        raise LoadTestError(f"{fields.source}.meets must be true or false")
    if replicas is None:
        return Answer(arch, None, meets, None, None, str(fields.get("reason", "no fleet")))
    count = int(fields.number("replicas", positive=True))
    fewer = fields.get("one_fewer")
    if fewer is None:
        reason = str(fields.get("one_fewer_reason", f"nothing smaller than {count} replica"))
        return Answer(
            arch,
            count,
            meets,
            None,
            None,
            reason,
            p95_ms=_optional(fields.get("p95_ms")),
            completed_share=_optional(fields.get("completed_share")),
        )
    smaller = _Fields(fewer, f"{fields.source}.one_fewer")
    fewer_meets = smaller.get("meets")
    if not isinstance(fewer_meets, bool):
        raise LoadTestError(f"{smaller.source}.meets must be true or false")
    return Answer(
        arch,
        count,
        meets,
        int(smaller.number("replicas", positive=True)),
        fewer_meets,
        p95_ms=_optional(fields.get("p95_ms")),
        completed_share=_optional(fields.get("completed_share")),
        one_fewer_p95_ms=_optional(smaller.get("p95_ms")),
        one_fewer_completed_share=_optional(smaller.get("completed_share")),
    )


def _optional(value: Any) -> float | None:
    """A figure the plan may leave null (an infinite p95 is written as null)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class _Fields:
    """One object of the plan, read field by field with the field's name in every error."""

    def __init__(self, value: Any, source: str) -> None:
        if not isinstance(value, dict):
            raise LoadTestError(f"{source} must be a JSON object")
        self.value = value
        self.source = source

    def get(self, name: str, default: Any = None) -> Any:
        return self.value.get(name, default)

    def section(self, name: str) -> _Fields:
        if name not in self.value:
            raise LoadTestError(
                f"{self.source}: no '{name}' (is it a plan from labsim plan --json?)"
            )
        return _Fields(self.value[name], f"{self.source}: {name}")

    def number(self, name: str, positive: bool = False) -> float:
        value = self.value.get(name)
        if not is_number(value, positive):
            raise LoadTestError(
                f"{self.source}.{name} must be a number {'>' if positive else '>='} 0, "
                f"got {value!r}"
            )
        return float(value)

    def choice(self, name: str, choices: tuple[str, ...]) -> str:
        value = self.value.get(name)
        if value not in choices:
            raise LoadTestError(
                f"{self.source}.{name} is one of {', '.join(choices)}, got {value!r}"
            )
        return str(value)

    def __getitem__(self, name: str) -> Any:
        return self.value[name]

    def __iter__(self) -> Any:
        return iter(self.value)

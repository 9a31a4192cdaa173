"""The target's own tools in a plan: each tool of the mix a parameter file measured, under
its own name, with the figures of the protocol era each architecture speaks.

`python -m loadtest measure --target URL --tool NAME --json F` writes a tool's figures
in the file's `tools` section, era by era: rounds per call, the server work of a round
(mean, spread, kind), bytes of a request and a response per round. A name of
`--tool-mix` is one of those tools or a demo tool of the lab (`labsim.model.tools`);
the file's wins where both have it. MRTR takes the tool's 2026-07-28 figures, the legacy
architectures its 2025-11-25 ones; an era the file did not measure takes the other's,
and the plan says so in a note.

A measured round is the whole of a request's time on the replica, as `round_cpu` of the
file is: the plan splits it, as it does the file's own, into the request's overhead (the
lab's own server's figure, borrowed, unless the file gives one) and the tool's own work
(`labsim.model.demand.split_round`). The file counts rounds, not questions: each round
before the last is taken to ask one question, an assumption the plan lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labsim.model.checks import ParameterError, is_number
from labsim.model.demand import ServiceTime, split_round
from labsim.model.measured import Measurement
from labsim.model.service_time import SERVICE_TIME_KINDS
from labsim.model.tools import TOOLS, SimTool, target_tool
from labsim.study.plan_inputs import ASSUMED, MEASURED, Input

MRTR_ERA = "2026-07-28"
LEGACY_ERA = "2025-11-25"
#: Questions each asking round of a target tool asks (assumption: the file counts rounds).
QUESTIONS_PER_ROUND = 1
#: The figures of one era of a tool, as `measure` writes them (`calls`, `failed`: counts).
ERA_FIELDS = (
    "rounds_per_call",
    "round_cpu",
    "request_bytes_per_round",
    "response_bytes_per_round",
    "calls",
    "failed",
)


def era_of(architecture: str) -> str:
    """The protocol era `architecture` models."""
    return MRTR_ERA if architecture == "mrtr" else LEGACY_ERA


@dataclass(frozen=True)
class ToolFigures:
    """One tool's figures in one era, as the parameter file measured them."""

    name: str
    era: str
    rounds_per_call: float
    #: The whole of a round's time on the replica, overhead and tool together.
    round_cpu: ServiceTime
    request_bytes: int
    response_bytes: int
    source: str

    def tool(self, overhead_s: float) -> SimTool:
        """The tool as the simulation takes it: its own work beyond `overhead_s`."""
        own, _ = split_round(self.round_cpu, overhead_s)
        return target_tool(
            self.name,
            self.rounds_per_call,
            own,
            QUESTIONS_PER_ROUND,
            self.request_bytes,
            self.response_bytes,
        )

    def describe(self) -> str:
        """The figures in words, as the plan lists them."""
        return (
            f"{_rounds(self.rounds_per_call)} a call, server work per round "
            f"{self.round_cpu.describe()}, {self.request_bytes} / {self.response_bytes} B "
            "per request / response"
        )


def measured_tools(files: Sequence[Measurement]) -> dict[str, dict[str, ToolFigures]]:
    """Every tool the files measured, by name then era (a later file's tool over an
    earlier's of the same name), each era's figures checked."""
    found: dict[str, dict[str, ToolFigures]] = {}
    for file in files:
        if not isinstance(file.tools, Mapping):
            raise ParameterError(f"{file.source}: 'tools' must be an object of tool: eras")
        for name, eras in file.tools.items():
            where = f"{file.source}: tools.{name}"
            if not isinstance(eras, Mapping) or not eras:
                raise ParameterError(f"{where} must be an object of era: figures")
            found[str(name)] = {
                str(era): _figures(str(name), str(era), value, file, f"{where}.{era}")
                for era, value in eras.items()
            }
    return found


def _figures(name: str, era: str, value: Any, file: Measurement, where: str) -> ToolFigures:
    if not isinstance(value, Mapping):
        raise ParameterError(f"{where} must be an object of {', '.join(ERA_FIELDS)}")
    unknown = sorted(set(value) - set(ERA_FIELDS))
    missing = [k for k in ERA_FIELDS[:4] if k not in value]
    if unknown or missing:
        said = f"unknown {', '.join(unknown)}" if unknown else f"no {', '.join(missing)}"
        raise ParameterError(f"{where}: {said}; an era has {', '.join(ERA_FIELDS)}")
    rounds = value["rounds_per_call"]
    if not (is_number(rounds) and rounds >= 1):
        raise ParameterError(f"{where}.rounds_per_call must be a number >= 1, got {rounds!r}")
    work = value["round_cpu"]
    if not isinstance(work, Mapping) or set(work) != {"mean_ms", "cv", "kind"}:
        raise ParameterError(f"{where}.round_cpu must be an object of mean_ms, cv, kind")
    if work["kind"] not in SERVICE_TIME_KINDS or not (
        is_number(work["mean_ms"], True) and is_number(work["cv"])
    ):
        raise ParameterError(
            f"{where}.round_cpu: mean_ms > 0, cv >= 0 and kind one of "
            f"{', '.join(SERVICE_TIME_KINDS)}, got {dict(work)!r}"
        )
    sizes = [value[k] for k in ("request_bytes_per_round", "response_bytes_per_round")]
    if not all(is_number(size) for size in sizes):
        raise ParameterError(f"{where}: bytes per round must be numbers >= 0, got {sizes!r}")
    try:
        whole = ServiceTime(work["mean_ms"] / 1e3, work["kind"], float(work["cv"]))
    except ParameterError as error:
        raise ParameterError(f"{where}.round_cpu: {error}") from None
    return ToolFigures(
        name, era, float(rounds), whole, round(sizes[0]), round(sizes[1]), file.label()
    )


def check_names(tools: Sequence[str], measured: Mapping[str, Any], files: str) -> None:
    """Refuse a name of the mix that is neither a measured tool nor a demo tool, naming both."""
    unknown = [name for name in tools if name not in measured and name not in TOOLS]
    if unknown:
        theirs = ", ".join(sorted(measured)) or "none"
        raise ParameterError(
            f"--tool-mix: unknown tools {unknown!r}; the parameter file ({files}) measured "
            f"{theirs}; the demo tools are {', '.join(TOOLS)}"
        )


def figures_for(
    tools: Sequence[str], measured: Mapping[str, dict[str, ToolFigures]], architecture: str
) -> tuple[list[ToolFigures], list[str]]:
    """The figures `architecture` simulates each measured tool of the mix by, and a note
    for each that takes the other era's."""
    chosen, notes = [], []
    wanted = era_of(architecture)
    for name in tools:
        eras = measured.get(name)
        if eras is None:
            continue
        if wanted in eras:
            chosen.append(eras[wanted])
            continue
        other = next(iter(eras.values()))
        chosen.append(other)
        speakers = "mrtr" if wanted == MRTR_ERA else "the legacy architectures"
        notes.append(
            f"{name}: {wanted} not measured; {speakers} take its {other.era} figures "
            f"({_rounds(other.rounds_per_call)} a call)"
        )
    return chosen, notes


def tool_rows(by_architecture: Mapping[str, Sequence[ToolFigures]]) -> list[Input]:
    """The plan's inputs for the target's tools: each tool's figures per era, with the
    architectures that take them, and the questions per round assumed."""
    users: dict[tuple[str, str], list[str]] = {}
    figures: dict[tuple[str, str], ToolFigures] = {}
    for architecture, found in by_architecture.items():
        for tool in found:
            users.setdefault((tool.name, tool.era), []).append(architecture)
            figures[(tool.name, tool.era)] = tool
    rows = [
        Input(
            f"tool {name}, {era} ({', '.join(users[(name, era)])})",
            figures[(name, era)].describe(),
            MEASURED,
            figures[(name, era)].source,
        )
        for name, era in figures
    ]
    if rows:
        rows.append(
            Input(
                "questions per asking round of the target's tools",
                f"{QUESTIONS_PER_ROUND}",
                ASSUMED,
                "assumption: the parameter file counts rounds, not questions",
            )
        )
    return rows


def _rounds(count: float) -> str:
    return f"{count:g} round{'' if count == 1 else 's'}"

"""A plan's tools as the lab's `rounds` tool plays them live: each in its own shape.

The plan counts each of its tools by its shape (`labsim.model.tools.SimTool`): its rounds,
the questions each asking round asks together, the calls that stop one asking round short,
and its own work per round. The demo tool `rounds` takes a shape as its arguments
(`server.tools.rounds`), so each tool of the plan runs live as a call of `rounds` with the
plan's rounds and questions (`rounds/3x2` in the run's tool mix:
`loadtest.users.tool_shape`) and the plan's work in every round: the held calls, the
answer posts and the rounds the plan counted are the ones run. A tool whose calls stop a
round short in a share of them is two shapes, in those shares.
"""

from __future__ import annotations

from dataclasses import dataclass

from labsim.model.service_time import ServiceTime
from labsim.model.tools import TOOLS, SimTool
from labsim.study.plan import Plan
from loadtest.config import LoadTestError
from loadtest.users.tool_shape import RoundsShape, ToolShapeError


@dataclass(frozen=True)
class PlayedTool:
    """One tool of the plan and the shapes of `rounds` that play it, each with its share
    of the tool's calls; `note` says what the shapes could not keep (empty: nothing)."""

    name: str
    shapes: tuple[tuple[RoundsShape, float], ...]
    note: str = ""

    def describe(self) -> str:
        """`update_work_item -> rounds/3x1`, as the run's notes list it."""
        if len(self.shapes) == 1:
            return f"{self.name} -> {self.shapes[0][0].name}"
        parts = ", ".join(f"{shape.name} ({part:.0%})" for shape, part in self.shapes)
        return f"{self.name} -> {parts}"


def tool_specs(plan: Plan) -> dict[str, SimTool]:
    """Each tool of the plan's mix as the plan simulated it: a target's tool of that name
    (`Plan.tools`), else the demo catalogue's; a `LoadTestError` for a name of neither."""
    measured = {tool.name: tool for tools in plan.tools.values() for tool in tools}
    specs: dict[str, SimTool] = {}
    for name in plan.request.tools:
        spec = measured.get(name) or TOOLS.get(name)
        if spec is None:
            raise LoadTestError(f"the plan's tool {name!r} is not one labsim models")
        specs[name] = spec
    return specs


def played_tool(spec: SimTool) -> PlayedTool:
    """The shapes of `rounds` that play `spec` (its version 1, as a steady run serves it).

    A shape asks as many questions in each round; a tool whose asking rounds ask unequal
    numbers is played by the nearest whole number a round, and the note says so.
    """
    asking = [len(questions) for questions in spec.rounds(1)]
    rounds = len(asking) + 1
    per_round = max(1, round(sum(asking) / len(asking))) if asking else 1
    note = ""
    if len(set(asking)) > 1:
        note = (
            f"{spec.name}'s rounds ask {', '.join(map(str, asking))} questions: played as "
            f"{per_round} a round"
        )
    try:
        longest = RoundsShape(rounds, per_round)
        if not spec.shorter_share:
            return PlayedTool(spec.name, ((longest, 1.0),), note)
        shorter = RoundsShape(rounds - 1, per_round)
    except ToolShapeError as error:
        raise LoadTestError(f"the plan's tool {spec.name!r}: {error}") from None
    parts = ((longest, 1.0 - spec.shorter_share), (shorter, spec.shorter_share))
    return PlayedTool(spec.name, parts, note)


def played_mix(plan: Plan) -> tuple[dict[str, float], list[PlayedTool]]:
    """The run's tool mix of shapes of `rounds`, with each plan tool's share, and how each
    tool of the plan was played."""
    specs = tool_specs(plan)
    mix: dict[str, float] = {}
    played: list[PlayedTool] = []
    for name, share in zip(plan.request.tools, plan.request.tool_mix, strict=True):
        tool = played_tool(specs[name])
        played.append(tool)
        for shape, part in tool.shapes:
            mix[shape.name] = mix.get(shape.name, 0.0) + share * part
    return mix, played


def own_round_work(plan: Plan) -> ServiceTime:
    """The tools' own work per round, the request's overhead apart: the workload's, or,
    where the plan's tools bring work of their own (a target's, as measured), their mean
    over the rounds of the mix, drawn as they are when all draw alike (else lognormal, of
    their mean spread)."""
    workload = plan.params.workload.round_cpu
    specs = tool_specs(plan)
    works = {name: spec.round_cpu or workload for name, spec in specs.items()}
    if all(spec.round_cpu is None for spec in specs.values()):
        return workload
    weights = {
        name: share * specs[name].mean_requests()
        for name, share in zip(plan.request.tools, plan.request.tool_mix, strict=True)
    }
    total = sum(weights.values()) or 1.0
    mean_s = sum(weights[name] * works[name].mean_s for name in weights) / total
    first = next(iter(works.values()))
    if all((w.kind, w.cv) == (first.kind, first.cv) for w in works.values()):
        return ServiceTime(mean_s=mean_s, kind=first.kind, cv=first.cv)
    cv = sum(weights[name] * works[name].cv for name in weights) / total
    return ServiceTime(mean_s=mean_s, kind="lognormal", cv=cv)


def work_note(plan: Plan) -> str:
    """What the live rounds' work leaves out of the plan's tools' own works (empty when
    every tool's round spends the same)."""
    specs = tool_specs(plan)
    workload = plan.params.workload.round_cpu
    works = {name: (spec.round_cpu or workload).mean_s * 1e3 for name, spec in specs.items()}
    if max(works.values()) - min(works.values()) <= 0.1 * max(works.values()):
        return ""
    listed = ", ".join(f"{name} {ms:.3g} ms" for name, ms in works.items())
    return (
        f"the tools' own work per round differs ({listed}): every live round spends their "
        "mean over the mix's rounds, the total the plan's"
    )

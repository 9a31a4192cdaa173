"""A plan as the architect reads it: the notes beside its figures, and its table.

The plan itself, and its JSON document (the contract `python -m loadtest verify-plan`
reads, its fields listed in `docs/model.md`), is `labsim.study.plan.Plan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from labsim.study.plan_inputs import Input

if TYPE_CHECKING:
    from labsim.study.plan import ArchitectureAnswer, FleetVerdict, Plan

_MISSING = "-"


def notes(shape_note: str, answers: Mapping[str, ArchitectureAnswer]) -> list[str]:
    """What the architect must know beside the table: a shape rounded up, an architecture
    no fleet serves and why, a verdict the replications could not settle."""
    found = []
    if shape_note:
        found.append(f"replica shape{shape_note}; see docs/model.md for the table")
    for name, answer in answers.items():
        if answer.fleet is None:
            found.append(f"{name}: {answer.reason}")
            continue
        for label, verdict in ((name, answer.fleet), (f"{name}, one fewer", answer.one_fewer)):
            if verdict is not None and verdict.marginal:
                found.append(
                    f"{label}: marginal: after {verdict.replications} replications its "
                    "runs still disagree, or the 95% interval of its p95 or completed share "
                    "holds the SLO's"
                )
    return found


# In a verdict, a figure of None is infinite: a p95 beyond the calls that completed.
_INFINITE = "miss"


def _share(value: float | None) -> str:
    return _MISSING if value is None else f"{value:.4f}"


def _ms(value: float | None) -> str:
    return _INFINITE if value is None else f"{value:.1f}"


def _interval(pair: tuple[float | None, float | None], digits: int) -> str:
    low, high = (_INFINITE if v is None else f"{v:.{digits}f}" for v in pair)
    return f"[{low}, {high}]"


def _uses(found: FleetVerdict) -> str:
    use = found.use
    return "/".join("inf" if use[k] is None else f"{use[k]:.2f}" for k in use)


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _column(answer: ArchitectureAnswer) -> dict[str, str]:
    """One architecture's cells of the table."""
    guess = answer.first_guess
    fleet = answer.fleet
    rows = {
        "replicas": _MISSING if fleet is None else str(fleet.replicas),
        "meets SLO and limits": ("yes" if answer.meets else "NO")
        + (" (marginal)" if fleet is not None and fleet.marginal else ""),
        "binding constraint": answer.binding,
        "latency floor p95 (ms)": f"{answer.latency_floor_p95_ms:.1f}",
        "first guess cpu/mem/conn/lat": "{cpu}/{memory}/{connections}/{latency}".format(**guess),
        "sizes simulated": ",".join(map(str, answer.simulated_sizes)) or _MISSING,
    }
    if fleet is None:
        return rows
    rows.update(_verdict_rows("", fleet))
    fewer = answer.one_fewer
    if fewer is None:
        rows["one fewer: replicas"] = "none"
    else:
        rows["one fewer: replicas"] = str(fewer.replicas)
        rows["one fewer: meets"] = ("yes" if fewer.meets else "no") + (
            " (marginal)" if fewer.marginal else ""
        )
        rows.update(_verdict_rows("one fewer: ", fewer))
        rows["one fewer: what broke"] = ",".join(fewer.broke) or "nothing"
    breakdown = answer.cost_breakdown or {}
    rows.update(
        {
            "cost per month (USD)": f"{answer.cost_per_month_usd:,.2f}",
            "  replicas": f"{breakdown['replicas_usd']:,.2f}",
            "  store": f"{breakdown['store_usd']:,.2f}",
            "  egress": f"{breakdown['egress_usd']:,.2f}",
        }
    )
    return rows


def _verdict_rows(prefix: str, found: FleetVerdict) -> dict[str, str]:
    return {
        f"{prefix}p95, all calls (ms)": _ms(found.p95_ms),
        f"{prefix}  its 95% interval": _interval(found.p95_ms_ci, 1),
        f"{prefix}  completed calls only (ms)": _ms(found.p95_completed_ms),
        f"{prefix}completed share": _share(found.completed_share),
        f"{prefix}  the share's 95% interval": _interval(found.completed_share_ci, 4),
        f"{prefix}use cpu/mem/conn/lat/compl": _uses(found),
        f"{prefix}503s, health-check downs": (
            f"{_count(found.refused_requests)}, {_count(found.down_marks)}"
        ),
    }


def table(plan: Plan) -> str:
    """The plan as a readable table, one column per architecture."""
    columns = {name: _column(answer) for name, answer in plan.architectures.items()}
    labels = list(dict.fromkeys(label for column in columns.values() for label in column))
    names = list(columns)
    width = max(len(label) for label in labels)
    cell = max(14, *(len(v) + 2 for c in columns.values() for v in c.values()))
    lines = [" " * width + "".join(f"{n:>{cell}s}" for n in names)]
    lines += [
        label.ljust(width) + "".join(f"{columns[n].get(label, ''):>{cell}s}" for n in names)
        for label in labels
    ]
    return "\n".join(lines)


def inputs_text(rows: list[Input]) -> str:
    """The inputs as the plan prints them, grouped by where they come from."""
    lines = []
    for kind in dict.fromkeys(row.kind for row in rows):
        lines.append(f"{kind}:")
        lines += [f"  {row.what}: {row.value} ({row.source})" for row in rows if row.kind == kind]
    return "\n".join(lines)

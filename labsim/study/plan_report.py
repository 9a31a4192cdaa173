"""A plan as the architect reads it: the figures it rests on, a table, and its JSON document.

The document is the contract `python -m loadtest verify-plan` reads (its fields are
listed in `docs/model.md`): the command that made it, the request as the architect set
it (with the server work per round as it was resolved), the simulated parameters, every
input with its source, and per architecture the fleet, whether it meets, what binds it,
its p95 and completed share with their confidence intervals, the use of every limit, the
run one replica smaller or why there is none, and the bill.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from labsim.study.plan_inputs import Input, assumptions, inputs_table

DOCUMENT_VERSION = 1
_MISSING = "-"


def document(plan: dict[str, Any], command: str, stated: set[str]) -> dict[str, Any]:
    """The plan's JSON document."""
    request = plan["request"]
    whole = plan["whole_round"]
    fields = dataclasses.asdict(request)
    fields.update(round_cpu_ms=whole.mean_s * 1e3, round_cpu_cv=whole.cv, round_cpu_kind=whole.kind)
    table = inputs(plan, stated)
    return {
        "version": DOCUMENT_VERSION,
        "command": command,
        "request": fields,
        # What the first architecture's runs simulated at its answer; the others differ
        # only in their fleet and base memory, both in `architectures`.
        "params": dataclasses.asdict(next(iter(plan["deployments"].values()))),
        "inputs": [dataclasses.asdict(row) for row in table],
        "assumptions": assumptions(table),
        "notes": notes(plan),
        "architectures": plan["architectures"],
    }


def inputs(plan: dict[str, Any], stated: set[str]) -> list[Input]:
    """Every figure the plan rests on, with its source."""
    return inputs_table(
        plan["request"], plan["inputs"], plan["whole_round"], stated, plan["shape_note"]
    )


def notes(plan: dict[str, Any]) -> list[str]:
    """What the architect must know beside the table: a shape rounded up, an architecture
    no fleet serves and why, a verdict the replications could not settle."""
    found = []
    if plan["shape_note"]:
        found.append(f"replica shape{plan['shape_note']}; see docs/model.md for the table")
    for name, answer in plan["architectures"].items():
        if answer["replicas"] is None:
            found.append(f"{name}: {answer['reason']}")
            continue
        for label, verdict in ((name, answer), (f"{name}, one fewer", answer.get("one_fewer"))):
            if verdict is not None and verdict["marginal"]:
                found.append(
                    f"{label}: marginal: after {verdict['replications']} replications its "
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


def _interval(pair: list[float | None], digits: int) -> str:
    low, high = (_INFINITE if v is None else f"{v:.{digits}f}" for v in pair)
    return f"[{low}, {high}]"


def _uses(found: dict[str, Any]) -> str:
    use = found["use"]
    return "/".join("inf" if use[k] is None else f"{use[k]:.2f}" for k in use)


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _column(answer: dict[str, Any]) -> dict[str, str]:
    """One architecture's cells of the table."""
    guess = answer["first_guess"]
    rows = {
        "replicas": _MISSING if answer["replicas"] is None else str(answer["replicas"]),
        "meets SLO and limits": ("yes" if answer["meets"] else "NO")
        + (" (marginal)" if answer.get("marginal") else ""),
        "binding constraint": answer["binding"],
        "latency floor p95 (ms)": f"{answer['latency_floor_p95_ms']:.1f}",
        "first guess cpu/mem/conn/lat": "{cpu}/{memory}/{connections}/{latency}".format(**guess),
        "sizes simulated": ",".join(map(str, answer["simulated_sizes"])) or _MISSING,
    }
    if answer["replicas"] is None:
        return rows
    rows.update(_verdict_rows("", answer))
    fewer = answer.get("one_fewer")
    if fewer is None:
        rows["one fewer: replicas"] = "none"
    else:
        rows["one fewer: replicas"] = str(fewer["replicas"])
        rows["one fewer: meets"] = ("yes" if fewer["meets"] else "no") + (
            " (marginal)" if fewer["marginal"] else ""
        )
        rows.update(_verdict_rows("one fewer: ", fewer))
        rows["one fewer: what broke"] = ",".join(fewer["broke"]) or "nothing"
    breakdown = answer["cost_breakdown"]
    rows.update(
        {
            "cost per month (USD)": f"{answer['cost_per_month_usd']:,.2f}",
            "  replicas": f"{breakdown['replicas_usd']:,.2f}",
            "  store": f"{breakdown['store_usd']:,.2f}",
            "  egress": f"{breakdown['egress_usd']:,.2f}",
        }
    )
    return rows


def _verdict_rows(prefix: str, found: dict[str, Any]) -> dict[str, str]:
    return {
        f"{prefix}p95, all calls (ms)": _ms(found["p95_ms"]),
        f"{prefix}  its 95% interval": _interval(found["p95_ms_ci"], 1),
        f"{prefix}  completed calls only (ms)": _ms(found["p95_completed_ms"]),
        f"{prefix}completed share": _share(found["completed_share"]),
        f"{prefix}  the share's 95% interval": _interval(found["completed_share_ci"], 4),
        f"{prefix}use cpu/mem/conn/lat/compl": _uses(found),
        f"{prefix}503s, health-check downs": (
            f"{_count(found['refused_requests'])}, {_count(found['down_marks'])}"
        ),
    }


def table(plan: dict[str, Any]) -> str:
    """The plan as a readable table, one column per architecture."""
    columns = {name: _column(answer) for name, answer in plan["architectures"].items()}
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

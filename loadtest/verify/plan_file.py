"""A plan as `python -m labsim plan --json P` writes it, read for checking live.

The plan is read by its own reader, `labsim.study.plan.Plan.from_json`, which refuses a
plan missing a field with that field's name; what the live check needs of it besides is
checked here: architectures the lab can run, a server work per round the plan resolved,
and every figure the live check uses within its range (`loadtest.verify.plan_ranges`).
The workload (arrivals, think time, tools, users who never answer, the server work per
round), the SLO and the replica's limits come from its `request`; how the simulated
replica split a round (the request's overhead and the tool's work), how many workers it
had, and how its client retried from its `params`; each architecture's answer (its fleet
and whether it meets, and one replica fewer) from its `architectures`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from labsim.study.plan import Plan, PlanFormatError
from loadtest.config import ARCHITECTURES, LoadTestError
from loadtest.verify.plan_ranges import check_ranges


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
    """A decoded plan document, checked for a live check."""
    try:
        plan = Plan.from_json(document, source)
    except PlanFormatError as error:
        raise LoadTestError(str(error)) from None
    unknown = sorted(set(plan.architectures) - set(ARCHITECTURES))
    if unknown or not plan.architectures:
        raise LoadTestError(
            f"{source}: architectures must name some of {', '.join(ARCHITECTURES)}"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )
    round_ms(plan, source)
    check_ranges(plan, source)
    return plan


def round_ms(plan: Plan, source: str = "plan") -> float:
    """The server work per round the plan states (ms): the request's, as the plan
    resolved it (stated, or its parameter file's)."""
    mean_ms = plan.request.round_cpu_ms
    if mean_ms is None or plan.request.round_cpu_kind is None:
        raise LoadTestError(f"{source}: request.round_cpu_ms and round_cpu_kind must be given")
    return mean_ms


def tool_shares(plan: Plan) -> dict[str, float]:
    """The plan's tools and the share of calls to each."""
    request = plan.request
    return {str(name): float(s) for name, s in zip(request.tools, request.tool_mix, strict=True)}

"""Thresholds a run must not cross, for CI: `--fail-if p95_ms>500`.

An expression is a figure of the run (`loadtest.scenarios.headline_figures`), an operator
(> >= < <= ==) and a number. Parsed and checked before the run starts, so a typo fails at
once rather than after the load; judged on the run's summary at its end, when any that
holds makes the command exit 1.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loadtest.scenarios.headline_figures import UnknownFigure, check_figure, figures

#: The operators an expression may use; the two-character ones are matched first.
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}
_EXPRESSION = re.compile(r"^\s*([A-Za-z0-9_./\-]+)\s*(>=|<=|==|>|<)\s*([-+0-9.eE]+)\s*$")


class ThresholdError(ValueError):
    """An expression that cannot be judged: malformed, or of a figure no run has."""


@dataclass(frozen=True)
class Threshold:
    """One `--fail-if`: the run fails when `figure op limit` holds at its end."""

    figure: str
    op: str
    limit: float

    @property
    def text(self) -> str:
        return f"{self.figure}{self.op}{self.limit:g}"

    def holds(self, value: float | None) -> bool:
        """Whether the expression holds for `value`; a figure the run has no value of (no
        call completed, so no latency) holds too: a gate cannot pass on nothing."""
        return value is None or OPERATORS[self.op](value, self.limit)


def parse_threshold(text: str, tools: list[str]) -> Threshold:
    """An expression as a threshold, refused when malformed or of an unknown figure."""
    found = _EXPRESSION.match(text)
    if found is None:
        raise ThresholdError(
            f"--fail-if {text!r}: not FIGURE OP NUMBER (e.g. p95_ms>500, error_share>0.01, "
            f"TOOL.p95_ms>=800; OP one of {' '.join(OPERATORS)})"
        )
    name, op, number = found.groups()
    try:
        limit = float(number)
    except ValueError:
        raise ThresholdError(f"--fail-if {text!r}: {number!r} is not a number") from None
    try:
        check_figure(name, tools)
    except UnknownFigure as error:
        raise ThresholdError(f"--fail-if {text!r}: {error}") from None
    return Threshold(name, op, limit)


def crossed(thresholds: list[Threshold], summary: dict[str, Any]) -> list[str]:
    """The thresholds that hold on the run's summary, each with the figure's value."""
    values = figures(summary)
    lines = []
    for threshold in thresholds:
        value = values.get(threshold.figure)
        if threshold.holds(value):
            shown = "no value" if value is None else f"{value:g}"
            lines.append(f"{threshold.text} holds ({threshold.figure} = {shown})")
    return lines

"""A call of the demo tool `rounds` named by its shape: `rounds/3x2` in a tool mix.

The server's `rounds` tool takes its shape from its arguments (`server.tools.rounds`): its
rounds, the questions each round but the last asks, and its CPU per round. A mix names a
shape of it as `rounds/ROUNDSxQUESTIONS` (`--tools rounds/3x1=1,rounds/2x2=1`), so that
one run calls it in several shapes, each counted under its own name; the CPU per round is
the run's (`--tool-cpu-ms`, drawn per call), as `quote` spends it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from server.tools.rounds import ROUNDS_MAX_QUESTIONS, ROUNDS_MAX_ROUNDS

#: The demo tool whose shape a mix's name gives.
SHAPED_TOOL = "rounds"
_NAME = re.compile(rf"{SHAPED_TOOL}/(\d+)x(\d+)")


class ToolShapeError(ValueError):
    """A shape of `rounds` the server would refuse, said in one line."""


@dataclass(frozen=True)
class RoundsShape:
    """A shape of the `rounds` tool: its rounds and the questions each round but the last
    asks together."""

    rounds: int
    questions_per_round: int = 1

    def __post_init__(self) -> None:
        if not (1 <= self.rounds <= ROUNDS_MAX_ROUNDS):
            raise ToolShapeError(
                f"{SHAPED_TOOL} takes 1 to {ROUNDS_MAX_ROUNDS} rounds, not {self.rounds}"
            )
        if not (1 <= self.questions_per_round <= ROUNDS_MAX_QUESTIONS):
            raise ToolShapeError(
                f"{SHAPED_TOOL} asks 1 to {ROUNDS_MAX_QUESTIONS} questions a round, not "
                f"{self.questions_per_round}"
            )

    @property
    def name(self) -> str:
        """The shape's name in a tool mix: `rounds/3x2`."""
        return f"{SHAPED_TOOL}/{self.rounds}x{self.questions_per_round}"

    @property
    def questions(self) -> int:
        """The questions one call asks, every round answered."""
        return (self.rounds - 1) * self.questions_per_round

    def arguments(self, cpu_ms_per_round: float) -> dict[str, int | float]:
        """The call's arguments, with `cpu_ms_per_round` of CPU in each round."""
        return {
            "rounds": self.rounds,
            "questions_per_round": self.questions_per_round,
            "cpu_ms_per_round": cpu_ms_per_round,
        }


def shape_of(name: str) -> RoundsShape | None:
    """The shape a mix's name gives `rounds` (None: the name is not one); a
    `ToolShapeError` for a shape beyond the tool's caps."""
    found = _NAME.fullmatch(name)
    if found is None:
        return None
    return RoundsShape(int(found[1]), int(found[2]))


def called_tool(name: str) -> str:
    """The demo tool a mix's name calls: `rounds` for a shape of it, else the name."""
    return SHAPED_TOOL if _NAME.fullmatch(name) else name

"""The mix of demo tools the simulated users call, and what makes one they can run.

A mix names tools of the demo catalog (`server.tools.demo`) with relative weights
(`--tools get_weather=3,echo=1`), the `rounds` tool by its shape (`rounds/3x2`:
`loadtest.users.tool_shape`). A name the catalog does not have would send every call
to an error (a run of `--tools nope=1` made 10,604 failing calls), and weights that add up
to nothing leave the users no tool to pick: both are refused before any process starts,
with the tools there are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from loadtest.users.tool_shape import SHAPED_TOOL, ToolShapeError, shape_of
from server.tools.demo import demo_catalog


class ToolMixError(ValueError):
    """A tool mix the users cannot run, said in one line."""


def known_tools() -> list[str]:
    """The demo tools a user can call, in the catalog's order."""
    return list(demo_catalog().tools)


def check_tool_mix(mix: Mapping[str, float]) -> None:
    """Refuse a mix with a tool the catalog lacks, a shape of `rounds` it would refuse, or
    without a positive, finite weight."""
    known = known_tools()
    for name in mix:
        try:
            shape_of(name)
        except ToolShapeError as error:
            raise ToolMixError(f"{name} in --tools: {error}") from None
    if SHAPED_TOOL in mix:
        raise ToolMixError(
            f"{SHAPED_TOOL} in --tools takes its shape in its name: "
            f"{SHAPED_TOOL}/ROUNDSxQUESTIONS, as {SHAPED_TOOL}/3x2"
        )
    unknown = [name for name in mix if name not in known and shape_of(name) is None]
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        tool = "tool" if len(unknown) == 1 else "tools"
        raise ToolMixError(
            f"unknown {tool} {names} in --tools; the demo tools are {', '.join(known)} "
            f"({SHAPED_TOOL} as {SHAPED_TOOL}/ROUNDSxQUESTIONS)"
        )
    weights = list(mix.values())
    if not weights or not all(math.isfinite(w) and w >= 0 for w in weights) or sum(weights) <= 0:
        raise ToolMixError(
            "--tools needs weights that are finite, none negative, and at least one above 0 "
            f"(given: {', '.join(f'{name}={weight:g}' for name, weight in mix.items()) or 'none'})"
        )

"""The simulated tools: the server's demo tools, as rounds of questions per tool version.

A tool call is a sequence of rounds. Each round is some server work that ends
either with the result or with questions for the user; the questions of one
round are asked together (`link_accounts` asks `github_login` and
`google_login` in one round, as the server's `ctx.ask` does), and a later round
may ask more (`update_work_item` asks `duplicate_of` after a `Duplicate`
resolution). Version 2 of `link_accounts` asks `microsoft_login` where version
1 asked `google_login`: the seed's rolling upgrade. `crunch` asks nothing, but
its long work can be handed to another replica in `requestState` when its
replica is overloaded (`offloads`); no other tool does that.

The simulation does not import the server: a test runs the server's demo tools
and holds this catalogue in step with them.

Questions are bits of a mask so that "what the user has already answered" is
one integer: in `requestState` under MRTR, in the held coroutine under the
legacy protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Round = tuple[str, ...]


@dataclass(frozen=True)
class SimTool:
    """One demo tool as the simulation sees it: its rounds of questions, and whether it offloads.

    `rounds_v2` is the tool as version 2 of the server serves it (None: the
    same as version 1). The rounds are those of the longest path through the
    tool (`update_work_item` resolved as a duplicate).
    """

    name: str
    rounds_v1: tuple[Round, ...]
    rounds_v2: tuple[Round, ...] | None = None
    offloads: bool = False
    masks: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False, repr=False)
    counts: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    def rounds(self, version: int) -> tuple[Round, ...]:
        """The question names of each asking round, as tool version `version` asks them."""
        if version == 2 and self.rounds_v2 is not None:
            return self.rounds_v2
        return self.rounds_v1

    def round_masks(self, version: int) -> tuple[int, ...]:
        """Each asking round's questions as a bit mask (see `QUESTION_BITS`)."""
        return self.masks[version]

    def questions(self, version: int = 1) -> int:
        """How many questions a call asks when nothing goes wrong."""
        return self.counts[2 if version == 2 else 1]  # counted once, below the catalogue

    def requests(self, version: int = 1) -> int:
        """How many requests (rounds) an MRTR call makes when nothing goes wrong."""
        return len(self.rounds(version)) + 1


# The server's demo tools that ask, or shed, under MRTR. `provision_vm` becomes a task
# after its question and is modelled with the tasks, not here.
CATALOGUE: tuple[SimTool, ...] = (
    SimTool("crunch", (), offloads=True),
    SimTool("get_weather", (("github_login",),)),
    SimTool(
        "link_accounts",
        (("github_login", "google_login"),),
        (("github_login", "microsoft_login"),),
    ),
    SimTool("update_work_item", (("resolution",), ("duplicate_of",))),
    SimTool("ask_capital", (("github_login", "capital"),)),
    SimTool("echo", (("echo_input",),)),
    # The load test's CPU-heavy tool: one question, then cpu_ms of work per round.
    SimTool("quote", (("github_login",),)),
)
TOOLS: dict[str, SimTool] = {tool.name: tool for tool in CATALOGUE}

#: One bit per question name, in order of first appearance in the catalogue.
QUESTION_BITS: dict[str, int] = {}
for _tool in CATALOGUE:
    for _version in (1, 2):
        for _round in _tool.rounds(_version):
            for _name in _round:
                QUESTION_BITS.setdefault(_name, 1 << len(QUESTION_BITS))
    for _version in (1, 2):
        _tool.masks[_version] = tuple(
            sum(QUESTION_BITS[name] for name in r) for r in _tool.rounds(_version)
        )
        _tool.counts[_version] = sum(len(r) for r in _tool.rounds(_version))


def questions_asked(answered: int, masks: tuple[int, ...]) -> int:
    """The questions the next round asks: the first round's that are not answered yet.

    As the server's `ctx.ask` does, a round whose questions were all answered
    (they came back in `requestState`) is passed; one partly answered asks only
    what is missing.
    """
    for mask in masks:
        missing = mask & ~answered
        if missing:
            return missing
    return 0


def requests_per_call(names: tuple[str, ...], mix: tuple[float, ...], version: int = 1) -> float:
    """Mean MRTR requests (rounds of server work) per call of a tool mix, nothing going wrong."""
    return sum(
        share * TOOLS[name].requests(version) for name, share in zip(names, mix, strict=True)
    )


def questions_per_call(names: tuple[str, ...], mix: tuple[float, ...], version: int = 1) -> float:
    """Mean questions asked per call of a tool mix, nothing going wrong."""
    return sum(
        share * TOOLS[name].questions(version) for name, share in zip(names, mix, strict=True)
    )

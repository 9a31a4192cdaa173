"""The simulated tools: a tool is its rounds of questions, its work per round and its bytes.

A tool call is a sequence of rounds. Each round is some server work that ends
either with the result or with questions for the user; the questions of one
round are asked together (`link_accounts` asks `github_login` and
`google_login` in one round, as the server's `ctx.ask` does), and a later round
may ask more (`update_work_item` asks `duplicate_of` after a `Duplicate`
resolution). Version 2 of `link_accounts` asks `microsoft_login` where version
1 asked `google_login`: the seed's rolling upgrade. `crunch` asks nothing, but
its long work can be handed to another replica in `requestState` when its
replica is overloaded (`offloads`); no other tool does that.

Every tool has the same shape (`SimTool`): its asking rounds, any number; the
share of its calls that stop one asking round short (a measured mean of 2.2
rounds per call is two asking rounds, one call in five, and one, four in five:
a discrete mix of the two counts around the mean); its own work per round (None:
the workload's `round_cpu`, as for the lab's demo tools); and its bytes per
round (None: the workload's). The demo catalogue (`CATALOGUE`) is the lab's own
server's tools; a tool measured on another server (`target_tool`) is made of
its measured figures, under its own name. The server's `rounds` tool has no shape of
its own, so no place in the catalogue: a call's arguments give it one (`rounds_tool`).

The simulation does not import the server: a test runs the server's demo tools
and holds this catalogue in step with them.

Questions are bits of a mask so that "what the user has already answered" is
one integer: in `requestState` under MRTR, in the held coroutine under the
legacy protocol.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from labsim.model.checks import require
from labsim.model.service_time import ServiceTime

Round = tuple[str, ...]


@dataclass(frozen=True)
class SimTool:
    """One tool as the simulation sees it: its rounds of questions, its work and bytes
    per round, and whether it offloads.

    `rounds_v2` is the tool as version 2 of the server serves it (None: the
    same as version 1). The rounds are those of the longest path through the
    tool (`update_work_item` resolved as a duplicate); `shorter_share` of the
    calls stop before the last asking round (`shorter`).
    """

    name: str
    rounds_v1: tuple[Round, ...]
    rounds_v2: tuple[Round, ...] | None = None
    offloads: bool = False
    #: The tool's own work per round, the request's overhead apart (None: the workload's).
    round_cpu: ServiceTime | None = None
    #: The share of calls that ask one round fewer than `rounds_v1` (0: none).
    shorter_share: float = 0.0
    #: Bytes of a request and a response body per round (None: the workload's).
    request_bytes: int | None = None
    response_bytes: int | None = None

    def __post_init__(self) -> None:
        require(
            0 <= self.shorter_share < 1 and (bool(self.rounds_v1) or not self.shorter_share),
            f"tool {self.name}: shorter_share is a share in [0, 1) of a tool that asks, "
            f"got {self.shorter_share!r}",
        )

    def rounds(self, version: int) -> tuple[Round, ...]:
        """The question names of each asking round, as tool version `version` asks them."""
        if version == 2 and self.rounds_v2 is not None:
            return self.rounds_v2
        return self.rounds_v1

    def round_masks(self, version: int) -> tuple[int, ...]:
        """Each asking round's questions as a bit mask (see `QUESTION_BITS`)."""
        return self._masks[2 if version == 2 else 1]

    def questions(self, version: int = 1) -> int:
        """How many questions a call asks when nothing goes wrong, every round asked."""
        return self._counts[2 if version == 2 else 1]

    def requests(self, version: int = 1) -> int:
        """How many requests (rounds) an MRTR call makes when nothing goes wrong, every
        round asked."""
        return len(self.rounds(version)) + 1

    def mean_questions(self, version: int = 1) -> float:
        """The questions a call asks on average, some calls stopping a round short."""
        if not self.shorter_share:
            return self.questions(version)
        return self.questions(version) - self.shorter_share * len(self.rounds(version)[-1])

    def mean_requests(self, version: int = 1) -> float:
        """The requests a call makes on average, some calls stopping a round short."""
        return self.requests(version) - self.shorter_share

    def for_call(self, draw: float) -> SimTool:
        """The tool as one call sees it, for a uniform `draw` in [0, 1): stopping one
        asking round short with probability `shorter_share`, all its rounds otherwise."""
        if not self.shorter_share:
            return self
        return self.shorter if draw < self.shorter_share else self.longest

    @functools.cached_property
    def longest(self) -> SimTool:
        """The tool as the calls that ask every round see it."""
        return replace(self, shorter_share=0.0)

    @functools.cached_property
    def shorter(self) -> SimTool:
        """The tool as the calls that stop one asking round short see it."""
        return replace(
            self,
            rounds_v1=self.rounds_v1[:-1],
            rounds_v2=None if self.rounds_v2 is None else self.rounds_v2[:-1],
            shorter_share=0.0,
        )

    @functools.cached_property
    def _masks(self) -> dict[int, tuple[int, ...]]:
        bits = question_bits(self)
        return {
            version: tuple(sum(bits[name] for name in r) for r in self.rounds(version))
            for version in (1, 2)
        }

    @functools.cached_property
    def _counts(self) -> dict[int, int]:
        return {version: sum(len(r) for r in self.rounds(version)) for version in (1, 2)}


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
#: A shape of the server's `rounds` tool named in a mix: `rounds/3x2` is three rounds,
#: each but the last asking two questions together (the load test's name for it,
#: `loadtest.users.tool_shape`, which labsim does not import).
ROUNDS_SHAPE = re.compile(r"rounds/([1-9]\d*)x([1-9]\d*)")


class ToolCatalogue(Mapping[str, SimTool]):
    """The tools the simulation knows by name: the server's demo tools (iterated, listed
    when a name is refused) and every shape of its `rounds` tool by its mix name
    (`rounds/3x2`, made when asked for: `rounds_tool`)."""

    def __init__(self, tools: Sequence[SimTool]) -> None:
        self._tools = {tool.name: tool for tool in tools}

    def __getitem__(self, name: str) -> SimTool:
        if name in self._tools:
            return self._tools[name]
        shape = ROUNDS_SHAPE.fullmatch(name) if isinstance(name, str) else None
        if shape is None:
            raise KeyError(name)
        return replace(rounds_tool(int(shape[1]), int(shape[2])), name=name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)


TOOLS = ToolCatalogue(CATALOGUE)

#: One bit per question name of the catalogue, in order of first appearance.
QUESTION_BITS: dict[str, int] = {}
for _tool in CATALOGUE:
    for _version in (1, 2):
        for _round in _tool.rounds(_version):
            for _name in _round:
                QUESTION_BITS.setdefault(_name, 1 << len(QUESTION_BITS))


def question_bits(tool: SimTool) -> dict[str, int]:
    """A bit for each question `tool` asks: the catalogue's own, and for a question the
    catalogue does not ask (a target tool's) one above them, by its place in the tool.
    Only one call's questions are ever held in one mask, so the bits need to differ
    within a tool alone."""
    bits: dict[str, int] = {}
    for version in (1, 2):
        for r in tool.rounds(version):
            for name in r:
                if name not in bits:
                    bits[name] = QUESTION_BITS.get(name, 1 << (len(QUESTION_BITS) + len(bits)))
    return bits


def target_tool(
    name: str,
    rounds_per_call: float,
    round_cpu: ServiceTime | None = None,
    questions_per_round: int = 1,
    request_bytes: int | None = None,
    response_bytes: int | None = None,
) -> SimTool:
    """A tool of another server as its measurement describes it: `rounds_per_call`
    rounds (a mean, at least 1: the last answers, each before it asks
    `questions_per_round` questions), and its own work and bytes per round.

    A mean between two counts is the discrete mix of the two that has it: 2.2 rounds
    are 3 rounds for one call in five and 2 for the rest.
    """
    require(
        math.isfinite(rounds_per_call) and rounds_per_call >= 1,
        f"tool {name}: rounds per call must be a number >= 1, got {rounds_per_call!r}",
    )
    require(
        questions_per_round >= 1,
        f"tool {name}: questions per round must be >= 1, got {questions_per_round!r}",
    )
    asking = rounds_per_call - 1
    longest = math.ceil(asking - 1e-9)
    rounds = tuple(
        tuple(f"{name}.round{k + 1}.q{q + 1}" for q in range(questions_per_round))
        for k in range(longest)
    )
    return SimTool(
        name,
        rounds,
        round_cpu=round_cpu,
        shorter_share=max(0.0, round(longest - asking, 9)),
        request_bytes=request_bytes,
        response_bytes=response_bytes,
    )


def rounds_tool(rounds: int, questions_per_round: int = 1) -> SimTool:
    """The server's `rounds` tool as a call with these arguments takes it: `rounds` rounds,
    each but the last asking `questions_per_round` questions together, named as the server
    names them (`round1_q1`, ...); its work per round is the workload's."""
    require(
        isinstance(rounds, int) and rounds >= 1,
        f"tool rounds: rounds must be a whole number >= 1, got {rounds!r}",
    )
    require(
        isinstance(questions_per_round, int) and questions_per_round >= 1,
        f"tool rounds: questions per round must be a whole number >= 1, got "
        f"{questions_per_round!r}",
    )
    asking = tuple(
        tuple(f"round{k}_q{q}" for q in range(1, questions_per_round + 1)) for k in range(1, rounds)
    )
    return SimTool("rounds", asking)


def tool_names(tools: Sequence[SimTool]) -> str:
    """The names of `tools`, as a refusal lists them to choose from."""
    return ", ".join(tool.name for tool in tools)


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


def _tools(tools: Sequence[str | SimTool]) -> list[SimTool]:
    """`tools` as tools, a name standing for the catalogue's tool of that name."""
    return [TOOLS[tool] if isinstance(tool, str) else tool for tool in tools]


def requests_per_call(
    tools: Sequence[str | SimTool], mix: Sequence[float], version: int = 1
) -> float:
    """Mean MRTR requests (rounds of server work) per call of a tool mix, nothing going
    wrong (a tool named stands for the catalogue's)."""
    return sum(
        share * tool.mean_requests(version) for tool, share in zip(_tools(tools), mix, strict=True)
    )


def questions_per_call(
    tools: Sequence[str | SimTool], mix: Sequence[float], version: int = 1
) -> float:
    """Mean questions asked per call of a tool mix, nothing going wrong (a tool named
    stands for the catalogue's)."""
    return sum(
        share * tool.mean_questions(version) for tool, share in zip(_tools(tools), mix, strict=True)
    )

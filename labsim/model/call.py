"""A tool call in flight, and the user session it belongs to.

The simulation makes a `Call` for each call of the workload as it arrives; the
architecture serving it (or the persistent tools, for a task) counts on it what the
call has cost so far: rounds, answers, re-prompts, retries, CPU, bytes, store
operations. When the call ends, `Call.record` is its row of the run's results
(`labsim.model.metrics.CALL_COLUMNS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labsim.model.tools import SimTool
from labsim.model.workload import DRAWS_PER_CALL

if TYPE_CHECKING:
    from labsim.model.cluster import Replica

_LAST_DRAW = DRAWS_PER_CALL - 1


class Session:
    """A user's session: calls that share one affinity cookie for the session's life.

    Behind a cookie-sticky balancer (as with `Mcp-Session-Id` pinned by a
    cookie) every call of the session goes to the replica its first call got.
    """

    __slots__ = ("cookie", "opened")

    def __init__(self) -> None:
        self.cookie: Replica | None = None
        #: Whether the session's `initialize` has been sent (a cut call's client opens a
        #: new session before it starts the call again).
        self.opened = False


class Call:
    """A tool call in flight: what the client knows about it and what it has cost so far.

    `tool` is the tool's index in the workload's tools, `spec` the tool itself;
    `answered_ever` is a bit mask of the questions the user has answered in this
    call, so that asking one again counts as a re-prompt.
    """

    __slots__ = (
        "answered_ever",
        "answers",
        "arrival_s",
        "bytes_in",
        "bytes_out",
        "cpu",
        "cpu_s",
        "expired_states",
        "first_replica",
        "index",
        "next_think",
        "offloads",
        "queue_wait_s",
        "re_prompts",
        "request_bytes",
        "response_bytes",
        "restarts",
        "retries",
        "rounds",
        "session",
        "spec",
        "store_ops",
        "think",
        "think_s",
        "tool",
        "wasted_cpu_s",
    )

    def __init__(
        self,
        index: int,
        tool: int,
        spec: SimTool,
        arrival_s: float,
        cpu: list[float],
        think: list[float],
        session: Session | None = None,
        sizes: tuple[int, int] = (0, 0),
    ) -> None:
        self.index = index
        self.session = session if session is not None else Session()
        self.tool = tool
        self.spec = spec
        self.arrival_s = arrival_s
        self.cpu = cpu
        self.think = think
        #: Bytes of a request and of a response body per round, as its tool sends them.
        self.request_bytes, self.response_bytes = sizes
        self.next_think = 0
        self.first_replica = -1
        self.answered_ever = 0
        self.answers = self.re_prompts = self.rounds = 0
        self.restarts = self.retries = self.offloads = self.store_ops = 0
        self.expired_states = 0
        self.bytes_in = self.bytes_out = 0
        self.think_s = self.queue_wait_s = self.cpu_s = self.wasted_cpu_s = 0.0

    def round_cpu_s(self, round_index: int) -> float:
        """The tool's own CPU for a round of this call."""
        return self.cpu[round_index if round_index < _LAST_DRAW else _LAST_DRAW]

    def draw_think_s(self, questions: int = 1) -> float:
        """How long the user takes over the next `questions` asked together (inf: never answers).

        The user answers the questions of one round one after the other, so
        their think times add up.
        """
        total = 0.0
        for _ in range(questions):
            k = self.next_think
            self.next_think = k + 1
            total += self.think[k if k < _LAST_DRAW else _LAST_DRAW]
        return total

    def record(self, end_s: float, outcome: str) -> tuple:
        """The call's row for `labsim.model.metrics.CALL_COLUMNS`."""
        asked_by_tool = self.spec.questions(1)
        new_questions = self.answers - self.re_prompts - asked_by_tool
        return (
            self.index,
            self.tool,
            self.arrival_s,
            end_s,
            outcome,
            self.think_s,
            self.queue_wait_s,
            self.cpu_s,
            self.wasted_cpu_s,
            self.rounds,
            self.answers,
            self.re_prompts,
            new_questions if new_questions > 0 else 0,
            self.restarts,
            self.retries,
            self.offloads,
            self.expired_states,
            self.store_ops,
            self.bytes_in,
            self.bytes_out,
            self.first_replica,
        )

"""A flow is one whole tool call as one user lives it: every round, every answer, every retry.

The load test's users run flows back to back. A flow measures what the user would feel
(latency with the user's own think time taken out, rounds, questions asked again) and
reacts to faults the way each architecture's real client does:

- MRTR (here): a round cut by a fault (connection refused or reset, 502/503/504) is sent
  again, to whichever replica the balancer picks; the user is never asked again.
- Legacy SSE (`loadtest.users.legacy_flow`): a cut stream loses the call; the client starts it
  again from scratch and the user answers every question again (re-prompts).
- Tasks (`loadtest.users.task_flow`): the call becomes a task in the shared store; the client
  polls it, answers what it asks, and fetches its result, whichever replica answers.

Flows are written against a tiny HTTP interface (`loadtest.users.http_interface`) so they run
the same on Locust's fast HTTP client, on httpx in tests, or anywhere else.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from loadtest.users.call_failure import rpc_error_failure, tool_error_failure
from loadtest.users.http_interface import RETRYABLE_STATUS, HttpReply, Post
from loadtest.users.simulated_user import Answerer, Sleep, ThinkTime, lab_answer, think_for
from loadtest.users.tool_shape import called_tool, shape_of
from server.client import Exchange, McpError, text_of
from server.tools.crunch import crunch_start, crunch_units

#: What the swarm's users can answer: forms, LLM samples and roots.
USER_CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}


@dataclass
class CallRecord:
    """The outcome of one flow, one line of the load test's call log."""

    tool: str
    arch: str
    started: float
    ended: float = 0.0
    # abandoned: the user never answered (not a miss of the servers: the plan leaves such
    # calls out of its latency and completion)
    outcome: str = "completed"  # completed | failed | lost | abandoned
    latency_ms: float = 0.0
    rounds: int = 0
    retries: int = 0
    re_prompts: int = 0
    questions: list[list[str]] = field(default_factory=list)
    served_by: list[str] = field(default_factory=list)
    error: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    #: For a call run as a task: its id, wire form, last status and what happened to it.
    task: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


class Abandoned(Exception):
    """The user of a call will never answer its question: the call ends there."""


@dataclass(frozen=True)
class Backoff:
    """How long a client waits before it sends a refused request again: `first_s`, doubling
    at each retry, never more than `max_s`."""

    first_s: float = 0.05
    max_s: float = 0.5

    def delay_s(self, attempt: int) -> float:
        """The wait before retry `attempt + 1` (attempt 0 is the first retry)."""
        return min(self.first_s * 2**attempt, self.max_s)


@dataclass
class Caller:
    """One user making one call: sends each message (again while no replica answers),
    thinks, answers, and keeps the call's record."""

    post: Post
    record: CallRecord
    think: ThinkTime
    rng: random.Random
    max_retries: int = 8
    sleep: Sleep = time.sleep
    thinking_s: float = 0.0
    answered: set[str] = field(default_factory=set)
    t0: float = field(default_factory=time.perf_counter)
    backoff: Backoff = field(default_factory=Backoff)
    #: The user will never answer: the call ends at its first question.
    silent: bool = False
    #: How the user answers each question.
    answer: Answerer = lab_answer
    #: Whether the last round sent carried the user's answers (`inputResponses`).
    carried_answers: bool = False

    def deliver(self, headers: dict[str, str], body: dict[str, Any]) -> HttpReply | None:
        """POST one message, again while no replica answers; None when none ever did."""
        for attempt in range(self.max_retries + 1):
            reply = self.post(headers, body)
            if reply.status not in RETRYABLE_STATUS or reply.body is not None:
                if reply.served_by:
                    self.record.served_by.append(reply.served_by)
                return reply
            self.record.retries += 1
            self.sleep(self.backoff.delay_s(attempt))
        return None

    def answers(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        """The user thinks, then answers every open question."""
        keys = sorted(input_requests)
        if self.silent:
            raise Abandoned(f"the user never answers {', '.join(keys)}")
        self.record.questions.append(keys)
        self.record.re_prompts += len(self.answered.intersection(keys))
        self.answered.update(keys)
        self.thinking_s += think_for(self.think.draw(), self.sleep)
        return {k: self.answer(k, input_requests[k], self.rng) for k in keys}

    def run(self, exchange: Exchange) -> bool:
        """Every MRTR round of `exchange` to its result; False when a round found no replica.

        A JSON-RPC error raises `McpError`.
        """
        while True:
            headers, body = exchange.next_request()
            self.carried_answers = bool((body.get("params") or {}).get("inputResponses"))
            reply = self.deliver(headers, body)
            if reply is None:
                return False
            if exchange.record(body, reply.status, reply.body, 0.0):
                return True
            if exchange.needs_backoff:  # load shedding: state only, go again at once
                continue
            exchange.answer(self.answers(exchange.input_requests))

    def finish(self) -> CallRecord:
        """Stamp the end and the latency the user felt (own think time taken out)."""
        self.record.ended = time.time()
        elapsed_s = time.perf_counter() - self.t0 - self.thinking_s
        self.record.latency_ms = max(0.0, elapsed_s * 1000)
        return self.record


_CRUNCH_DIGESTS: dict[int, str] = {}


def expected_crunch_digest(units: int) -> str:
    """The digest a `crunch` of `units` must produce, however often it moved (memoised)."""
    if units not in _CRUNCH_DIGESTS:
        _CRUNCH_DIGESTS[units] = crunch_units(crunch_start(), 0, units)
    return _CRUNCH_DIGESTS[units]


def run_mrtr_flow(
    post: Post,
    tool: str,
    arguments: dict[str, Any],
    *,
    think: ThinkTime,
    rng: random.Random,
    max_retries: int = 8,
    sleep: Sleep = time.sleep,
    capabilities: dict[str, Any] | None = None,
    backoff: Backoff | None = None,
    answer: Answerer = lab_answer,
) -> CallRecord:
    """One MRTR tool call, all rounds, retrying a cut round on whatever replica answers.

    A user who never answers ends the call at its first question (`abandoned`): under MRTR
    nothing waits for the answer, so nothing is held.
    """
    record = CallRecord(tool=tool, arch="mrtr", started=time.time())
    caller = Caller(post, record, think, rng, max_retries, sleep, backoff=backoff or Backoff())
    caller.silent = think.never_answers()
    caller.answer = answer
    exchange = Exchange(
        "tools/call",
        {"name": called_tool(tool), "arguments": arguments},
        capabilities or USER_CAPABILITIES,
        max_rounds=64,
    )
    try:
        if not caller.run(exchange):
            record.outcome, record.error = "lost", f"no replica answered {tool}"
    except McpError as error:
        failure = rpc_error_failure(error, after_answers=caller.carried_answers)
        record.outcome, record.error = "failed", failure
    except Abandoned as silent:
        record.outcome, record.error = "abandoned", str(silent)
    record.rounds = len(exchange.rounds)
    caller.finish()
    if record.outcome == "completed":
        check_result(record, exchange.result or {}, arguments, caller.carried_answers)
    return record


def check_result(
    record: CallRecord,
    result: dict[str, Any],
    arguments: dict[str, Any],
    after_answers: bool = False,
) -> None:
    """Fail a completed call whose result is wrong (in the server's words, and as an answer
    rejected when its last round carried answers); keep what the summary reads from it."""
    if result.get("isError"):
        failure = tool_error_failure(result, after_answers=after_answers)
        record.outcome, record.error = "failed", failure
        return
    structured = result.get("structuredContent") or {}
    if record.tool == "crunch":
        record.detail = {"replicas": structured.get("replicas", [])}
        if structured.get("digest") != expected_crunch_digest(arguments["units"]):
            record.outcome, record.error = "failed", "crunch digest differs"
    elif record.tool == "provision_vm":
        record.detail = {"replicas": structured.get("replicas", [])}
        if structured.get("state") != "running":
            record.outcome, record.error = "failed", "the machine is not running"
    elif record.tool == "echo" and not text_of(result).startswith("Echo: "):
        record.outcome, record.error = "failed", "echo did not echo"
    elif record.tool == "link_accounts":
        record.detail = {"linked": sorted(structured.get("linked", {}))}
    elif (shape := shape_of(record.tool)) is not None:
        done = (structured.get("rounds"), structured.get("questionsAnswered"))
        if done != (shape.rounds, shape.questions):
            record.outcome = "failed"
            record.error = f"{record.tool} took {done[0]} rounds and {done[1]} questions"

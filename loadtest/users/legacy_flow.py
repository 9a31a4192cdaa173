"""A legacy (2025-11-25) tool call as one user lives it: held on an SSE stream while the
user thinks, each answer POSTed on its own.

A cut stream loses the call: the client starts it again from scratch and the user answers
every question again (re-prompts). A user keeps one session across calls and opens a new
one when its replica is gone; a call refused because its session is gone had not started,
so it goes out again on the new session without counting as a restart.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from loadtest.users.call_failure import rpc_error_failure
from loadtest.users.flows import USER_CAPABILITIES, Abandoned, Backoff, CallRecord, check_result
from loadtest.users.http_interface import RETRYABLE_STATUS, LegacyHttp, StreamCut
from loadtest.users.simulated_user import Answerer, Sleep, ThinkTime, lab_answer, think_for
from loadtest.users.tool_shape import called_tool
from server.client import SESSION_HEADER, LegacySession, McpError


def question_key(request: dict[str, Any]) -> str:
    """What identifies a legacy question to the user: its method and what it says."""
    params = request.get("params") or {}
    if request.get("method") == "elicitation/create":
        return str(params.get("message", ""))
    if request.get("method") == "sampling/createMessage":
        messages = params.get("messages") or [{}]
        return "sample: " + str((messages[0].get("content") or {}).get("text", ""))
    return str(request.get("method"))


class SessionGone(StreamCut):
    """A call was refused with 404: the replica does not know the call's session (it was
    opened on a replica that has since been replaced, or routed to another one)."""


@dataclass
class SessionHolder:
    """A user's legacy session, kept across calls and reopened when its replica is gone."""

    capabilities: dict[str, Any] = field(default_factory=lambda: dict(USER_CAPABILITIES))
    session: LegacySession | None = None

    def open(self, http: LegacyHttp) -> LegacySession:
        if self.session is not None:
            return self.session
        session = LegacySession(self.capabilities)
        headers, body = session.initialize_request()
        reply = http.post(headers, body)
        if reply.status in RETRYABLE_STATUS or reply.body is None:
            raise StreamCut(f"initialize failed with HTTP {reply.status}")
        session_id = reply.headers.get(SESSION_HEADER.lower())
        # A stateless server gives no session id (the transport lets a server choose): the
        # session's requests then go without one.
        session.opened(reply.status, {SESSION_HEADER: session_id}, reply.body)
        http.post(*session.initialized_notification())
        self.session = session
        return session


def run_legacy_flow(
    http: LegacyHttp,
    holder: SessionHolder,
    tool: str,
    arguments: dict[str, Any],
    *,
    arch: str,
    think: ThinkTime,
    rng: random.Random,
    max_retries: int = 8,
    sleep: Sleep = time.sleep,
    backoff: Backoff | None = None,
    answer: Answerer = lab_answer,
) -> CallRecord:
    """One legacy tool call: held on an SSE stream; a cut call starts again and re-asks.

    A user who never answers keeps the call's stream open, unanswered, until the replica
    gives up on the answer and ends it (`abandoned`): what such a call holds is the point.
    """
    call = _LegacyCall(http, CallRecord(tool=tool, arch=arch, started=time.time()), think, rng)
    call.silent = think.never_answers()
    call.answerer = answer
    backoff = backoff or Backoff()
    record = call.record
    # A user without a session opens one before the call: the call's latency is its
    # rounds', as labsim models a call (a session opened again after a cut is the call's).
    opened_first = holder.session is None and _open_quietly(holder, http)
    t0 = time.perf_counter()
    attempt = 0
    while True:
        fresh = holder.session is None or opened_first
        opened_first = False
        try:
            session = holder.open(http)
            params = {"name": called_tool(tool), "arguments": arguments}
            exchange = session.exchange("tools/call", params)
            call.drive(exchange, sleep)
            record.rounds = len(exchange.rounds)
            if record.outcome == "completed":
                check_result(record, exchange.result or {}, arguments, bool(call.answered))
            break
        except SessionGone as gone:
            holder.session = None
            if not fresh:
                # The session of an earlier call, on a replica since replaced: the call never
                # started, so it goes out at once on a new session (the spec's answer to a
                # 404), not as a restart.
                continue
            record.error = str(gone)
        except StreamCut as cut:
            holder.session = None  # its replica may be gone; open a new one
            record.error = str(cut)
        except McpError as error:
            failure = rpc_error_failure(error, after_answers=bool(call.answered))
            record.outcome, record.error = "failed", failure
            break
        except Abandoned as silent:
            record.outcome, record.error = "abandoned", str(silent)
            break
        if attempt == max_retries:
            record.outcome = "lost"
            break
        record.retries += 1
        sleep(backoff.delay_s(attempt))
        attempt += 1
    if record.outcome == "completed":
        record.error = ""
    record.ended = time.time()
    record.latency_ms = max(0.0, (time.perf_counter() - t0 - call.thinking_s) * 1000)
    return record


def _open_quietly(holder: SessionHolder, http: LegacyHttp) -> bool:
    """Open the user's session if it can be opened now; whether it was (if not, the call
    opens it, and its failure is the call's)."""
    try:
        holder.open(http)
    except (StreamCut, McpError):
        holder.session = None
        return False
    return True


@dataclass
class _LegacyCall:
    """One attempt after another of a legacy call, and what the user lived through."""

    http: LegacyHttp
    record: CallRecord
    think: ThinkTime
    rng: random.Random
    answered: set[str] = field(default_factory=set)
    thinking_s: float = 0.0
    #: The user will never answer: the stream is read, unanswered, until it ends.
    silent: bool = False
    #: How the user answers each question.
    answerer: Answerer = lab_answer

    def drive(self, exchange: Any, sleep: Sleep) -> None:
        """POST the call, answer what the stream asks, until the result (or a cut)."""
        headers, body = exchange.next_request()
        with self.http.stream(headers, body) as reply:
            if reply.status == 404:
                raise SessionGone("tools/call got HTTP 404: the replica does not know the session")
            if reply.status in RETRYABLE_STATUS:
                raise StreamCut(f"tools/call got HTTP {reply.status}")
            if reply.served_by:
                self.record.served_by.append(reply.served_by)
            if not reply.is_stream:
                exchange.take_json(reply.status, reply.body)
                return
            asked = ""
            try:
                for line in reply.lines():
                    request = exchange.feed_line(line)
                    if request is not None and self.silent:
                        asked = asked or question_key(request)
                    elif request is not None:
                        self.answer(exchange, request, sleep)
                    if exchange.done:
                        break
            except McpError:
                if not asked:
                    raise
                # The replica's answer timeout, for the question nobody answered.
            except (OSError, ConnectionError, StreamCut) as exc:
                if not asked:
                    raise StreamCut(f"stream broke: {type(exc).__name__}") from exc
            if asked:
                raise Abandoned(f"the user never answered {asked!r}; the replica ended the call")
            if exchange.done:
                return
        raise StreamCut("the stream ended without a result")

    def answer(self, exchange: Any, request: dict[str, Any], sleep: Sleep) -> None:
        """The user thinks, answers, and the answer is POSTed on its own."""
        key = question_key(request)
        self.record.questions.append([key])
        self.record.re_prompts += key in self.answered
        self.answered.add(key)
        self.thinking_s += think_for(self.think.draw(), sleep)
        headers, body = exchange.answer_request(request, self.answerer(key, request, self.rng))
        reply = self.http.post(headers, body)
        if reply.status != 202:
            # No call waits for this answer any more (its replica stopped or crashed, or
            # the answer reached a replica that cannot route it): the call is gone.
            error = (reply.body or {}).get("error") or {}
            raise StreamCut(f"answer refused with HTTP {reply.status} {error.get('message', '')}")
        exchange.answered(body, reply.status, reply.body, 0.0)

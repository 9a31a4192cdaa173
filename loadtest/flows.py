"""A flow is one whole tool call as one user lives it: every round, every answer, every retry.

The load test's users run flows back to back. A flow measures what the user would feel
(latency with the user's own think time taken out, rounds, questions asked again) and
reacts to faults the way each architecture's real client does:

- MRTR: a round cut by a fault (connection refused or reset, 502/503/504) is sent again,
  to whichever replica the balancer picks; the user is never asked again.
- Legacy SSE: a cut stream loses the call; the client starts it again from scratch and the
  user answers every question again (re-prompts).

Flows are written against a tiny HTTP interface (`Post`, and `LegacyHttp` for streams) so
they run the same on Locust's fast HTTP client, on httpx in tests, or anywhere else.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from server.client import SESSION_HEADER, Exchange, LegacySession, McpError
from server.tools.demo import crunch_start, crunch_units

#: HTTP statuses a balancer returns when a replica is gone or busy: retry elsewhere.
RETRYABLE_STATUS = {0, 502, 503, 504}


@dataclass
class HttpReply:
    """What a POST returned: status (0 when the connection failed), headers, JSON body."""

    status: int
    served_by: str | None
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)


Post = Callable[[dict[str, str], dict[str, Any]], HttpReply]


@dataclass
class StreamReply:
    """A POST whose answer may be an SSE stream: read `lines()` while it is open."""

    status: int
    served_by: str | None
    is_stream: bool
    body: dict[str, Any] | None
    lines: Callable[[], Iterator[str]]


class LegacyHttp(Protocol):
    """What a legacy flow needs from an HTTP client (cookies kept, for sticky balancers)."""

    def post(self, headers: dict[str, str], body: dict[str, Any]) -> HttpReply: ...

    def stream(
        self, headers: dict[str, str], body: dict[str, Any]
    ) -> AbstractContextManager[StreamReply]: ...


class StreamCut(Exception):
    """The call's stream or session is gone (replica stopped, crashed or restarted)."""


Sleep = Callable[[float], None]


@dataclass
class CallRecord:
    """The outcome of one flow, one line of the load test's call log."""

    tool: str
    arch: str
    started: float
    ended: float = 0.0
    outcome: str = "completed"  # completed | failed | lost
    latency_ms: float = 0.0
    rounds: int = 0
    retries: int = 0
    re_prompts: int = 0
    questions: list[list[str]] = field(default_factory=list)
    served_by: list[str] = field(default_factory=list)
    error: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


def tool_arguments(tool: str, rng: random.Random, crunch_units_: int) -> dict[str, Any]:
    """Arguments for a demo tool, as a varied user population would send them."""
    if tool == "get_weather":
        return {"location": rng.choice(["Paris", "Lagos", "Lima", "Oslo", "Pune"])}
    if tool == "update_work_item":
        return {"workItemId": rng.randint(1, 9999), "fields": {"System.State": "Resolved"}}
    if tool == "ask_capital":
        return {"country": rng.choice(["France", "Peru", "Japan", "Kenya"])}
    if tool == "crunch":
        return {"units": crunch_units_}
    return {}


def answer_for(request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A simulated user's (or LLM's, or client's) answer to one input request."""
    method = request.get("method")
    params = request.get("params") or {}
    if method == "sampling/createMessage":
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "swarm-model",
            "stopReason": "endTurn",
        }
    if method == "roots/list":
        return {"roots": [{"uri": "file:///work", "name": "work"}]}
    content: dict[str, Any] = {}
    for name, spec in (params.get("requestedSchema") or {}).get("properties", {}).items():
        if "enum" in spec:
            # Half the users mark duplicates, so update_work_item takes its second round.
            content[name] = "Duplicate" if rng.random() < 0.5 else spec["enum"][0]
        elif spec.get("type") in ("number", "integer"):
            content[name] = rng.randint(1, 9999)
        elif spec.get("type") == "boolean":
            content[name] = True
        else:
            content[name] = f"user{rng.randint(1, 999)}"
    return {"action": "accept", "content": content}


class ThinkTime:
    """How long a user takes to answer: lognormal, heavy-tailed, scaled down for a laptop."""

    def __init__(self, median_s: float, sigma: float, rng: random.Random) -> None:
        self.median_s = median_s
        self.sigma = sigma
        self.rng = rng

    def draw(self) -> float:
        if self.median_s <= 0:
            return 0.0
        return self.median_s * self.rng.lognormvariate(0.0, self.sigma)


def think_for(pause_s: float, sleep: Sleep) -> float:
    """Let the user think; returns the time that actually passed.

    That, not the planned pause, is what comes off the latency: a busy load generator
    wakes its users late, and the delay is the generator's, not the server's.
    """
    started = time.perf_counter()
    sleep(pause_s)
    return time.perf_counter() - started


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
) -> CallRecord:
    """One MRTR tool call, all rounds, retrying a cut round on whatever replica answers."""
    record = CallRecord(tool=tool, arch="mrtr", started=time.time())
    exchange = Exchange(
        "tools/call",
        {"name": tool, "arguments": arguments},
        capabilities or {"elicitation": {"form": {}}, "sampling": {}, "roots": {}},
        max_rounds=64,
    )
    answered: set[str] = set()
    thinking_s = 0.0
    t0 = time.perf_counter()
    try:
        while True:
            headers, body = exchange.next_request()
            for attempt in range(max_retries + 1):
                reply = post(headers, body)
                if reply.status not in RETRYABLE_STATUS or reply.body is not None:
                    break
                record.retries += 1
                sleep(min(0.05 * 2**attempt, 0.5))
            else:
                record.outcome, record.error = "lost", f"no replica answered {tool}"
                break
            if reply.served_by:
                record.served_by.append(reply.served_by)
            if exchange.record(body, reply.status, reply.body, 0.0):
                break
            if exchange.needs_backoff:  # load shedding: state only, go again at once
                continue
            keys = sorted(exchange.input_requests)
            record.questions.append(keys)
            record.re_prompts += len(answered.intersection(keys))
            answered.update(keys)
            thinking_s += think_for(think.draw(), sleep)
            exchange.answer({k: answer_for(exchange.input_requests[k], rng) for k in keys})
    except McpError as error:
        record.outcome, record.error = "failed", f"{error.code}: {error.message}"
    record.rounds = len(exchange.rounds)
    record.ended = time.time()
    record.latency_ms = max(0.0, (time.perf_counter() - t0 - thinking_s) * 1000)
    if record.outcome == "completed":
        _check_result(record, exchange.result or {}, arguments)
    return record


def question_key(request: dict[str, Any]) -> str:
    """What identifies a legacy question to the user: its method and what it says."""
    params = request.get("params") or {}
    if request.get("method") == "elicitation/create":
        return str(params.get("message", ""))
    if request.get("method") == "sampling/createMessage":
        messages = params.get("messages") or [{}]
        return "sample: " + str((messages[0].get("content") or {}).get("text", ""))
    return str(request.get("method"))


@dataclass
class SessionHolder:
    """A user's legacy session, kept across calls and reopened when its replica is gone."""

    capabilities: dict[str, Any] = field(
        default_factory=lambda: {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
    )
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
        session.opened(reply.status, {SESSION_HEADER: session_id}, reply.body)
        if not session.session_id:
            raise McpError(-32603, f"initialize gave no {SESSION_HEADER}")
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
) -> CallRecord:
    """One legacy tool call: held on an SSE stream; a cut call starts again and re-asks."""
    call = _LegacyCall(http, CallRecord(tool=tool, arch=arch, started=time.time()), think, rng)
    record = call.record
    t0 = time.perf_counter()
    for attempt in range(max_retries + 1):
        if attempt:
            record.retries += 1
            sleep(min(0.05 * 2**attempt, 0.5))
        try:
            session = holder.open(http)
            exchange = session.exchange("tools/call", {"name": tool, "arguments": arguments})
            call.drive(exchange, sleep)
            record.rounds = len(exchange.rounds)
            if record.outcome == "completed":
                _check_result(record, exchange.result or {}, arguments)
            break
        except StreamCut as cut:
            holder.session = None  # its replica may be gone; open a new one
            record.error = str(cut)
        except McpError as error:
            record.outcome, record.error = "failed", f"{error.code}: {error.message}"
            break
    else:
        record.outcome = "lost"
    if record.outcome == "completed":
        record.error = ""
    record.ended = time.time()
    record.latency_ms = max(0.0, (time.perf_counter() - t0 - call.thinking_s) * 1000)
    return record


@dataclass
class _LegacyCall:
    """One attempt after another of a legacy call, and what the user lived through."""

    http: LegacyHttp
    record: CallRecord
    think: ThinkTime
    rng: random.Random
    answered: set[str] = field(default_factory=set)
    thinking_s: float = 0.0

    def drive(self, exchange: Any, sleep: Sleep) -> None:
        """POST the call, answer what the stream asks, until the result (or a cut)."""
        headers, body = exchange.next_request()
        with self.http.stream(headers, body) as reply:
            if reply.status in RETRYABLE_STATUS or reply.status == 404:
                raise StreamCut(f"tools/call got HTTP {reply.status}")
            if reply.served_by:
                self.record.served_by.append(reply.served_by)
            if not reply.is_stream:
                exchange.take_json(reply.status, reply.body)
                return
            try:
                for line in reply.lines():
                    request = exchange.feed_line(line)
                    if request is not None:
                        self.answer(exchange, request, sleep)
                    if exchange.done:
                        return
            except (OSError, ConnectionError) as exc:
                raise StreamCut(f"stream broke: {type(exc).__name__}") from exc
        raise StreamCut("the stream ended without a result")

    def answer(self, exchange: Any, request: dict[str, Any], sleep: Sleep) -> None:
        """The user thinks, answers, and the answer is POSTed on its own."""
        key = question_key(request)
        self.record.questions.append([key])
        self.record.re_prompts += key in self.answered
        self.answered.add(key)
        self.thinking_s += think_for(self.think.draw(), sleep)
        headers, body = exchange.answer_request(request, answer_for(request, self.rng))
        reply = self.http.post(headers, body)
        if reply.status != 202:
            # No call waits for this answer any more (its replica stopped or crashed, or
            # the answer reached a replica that cannot route it): the call is gone.
            error = (reply.body or {}).get("error") or {}
            raise StreamCut(f"answer refused with HTTP {reply.status} {error.get('message', '')}")
        exchange.answered(body, reply.status, reply.body, 0.0)


def _check_result(record: CallRecord, result: dict[str, Any], arguments: dict[str, Any]) -> None:
    if result.get("isError"):
        record.outcome, record.error = "failed", "tool returned isError"
        return
    structured = result.get("structuredContent") or {}
    if record.tool == "crunch":
        record.detail = {"replicas": structured.get("replicas", [])}
        if structured.get("digest") != expected_crunch_digest(arguments["units"]):
            record.outcome, record.error = "failed", "crunch digest differs"
    elif record.tool == "link_accounts":
        record.detail = {"linked": sorted(structured.get("linked", {}))}


class HttpxLegacy:
    """`LegacyHttp` on an httpx client (tests, notebooks)."""

    def __init__(self, client: Any, url: str) -> None:
        self.post = httpx_post(client, url)
        self.client = client
        self.url = url

    @contextlib.contextmanager
    def stream(self, headers: dict[str, str], body: dict[str, Any]) -> Iterator[StreamReply]:
        import httpx

        try:
            with self.client.stream("POST", self.url, json=body, headers=headers) as response:
                is_stream = response.headers.get("content-type", "").startswith("text/event-stream")
                parsed = None
                if not is_stream:
                    response.read()
                    parsed = _json_or_none(response.text)
                yield StreamReply(
                    response.status_code,
                    response.headers.get("x-served-by"),
                    is_stream,
                    parsed,
                    response.iter_lines,
                )
        except httpx.TransportError as exc:
            raise StreamCut(f"connection failed: {type(exc).__name__}") from exc


def _json_or_none(text: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def httpx_post(client: Any, url: str) -> Post:
    """A `Post` on an httpx client (tests, notebooks); connection failures become status 0."""
    import httpx

    def post(headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
        try:
            response = client.post(url, json=body, headers=headers)
        except httpx.TransportError:
            return HttpReply(0, None, None)
        return HttpReply(
            response.status_code,
            response.headers.get("x-served-by"),
            _json_or_none(response.text),
            {k.lower(): v for k, v in response.headers.items()},
        )

    return post

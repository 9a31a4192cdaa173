"""The deployment under examination: its replicas' and balancer's URLs, each discovered
once, the tool whose calls ask a question, and the two halves of an MRTR call the checks
put on different replicas (a first round that asks, a retry that answers).

A call is sent as the lab's reference client sends it (`server.client.Exchange`): a fresh
JSON-RPC request per round with the 2026-07-28 headers and `_meta`, the `requestState`
echoed byte for byte. Arguments and answers are drawn valid from the tool's own schemas
(`loadtest.target`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from loadtest.doctor.settings import Examination
from loadtest.target import (
    Auth,
    Target,
    TargetAnswers,
    TargetTool,
    answers_for,
)
from loadtest.target.reply_deadline import deadline_client
from loadtest.target.workload import ToolArguments, Workload
from server.client import Exchange, McpError, reply_message

#: Calls tried before deciding a tool's calls carry no requestState.
SEALED_ATTEMPTS = 8
#: Rounds of one call followed, at most, to the one that carries a requestState.
MAX_ROUNDS = 5
#: What the doctor declares it can answer: every kind of question a tool may ask.
CAPABILITIES: dict[str, dict[str, Any]] = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}


@dataclass
class Deployment:
    """What the doctor examines: the replicas' URLs, the balancer's, each as discovered,
    and the tool that asks (None when no tool of the deployment asks)."""

    replicas: list[str]
    balancer: str | None
    auth: Auth
    settings: Examination
    targets: dict[str, Target] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)
    tool: TargetTool | None = None
    #: The user's workload file: the arguments and answers it states are used.
    workload: Workload | None = None
    rng: random.Random = field(default_factory=lambda: random.Random(37))

    @property
    def entry(self) -> str | None:
        """Where a user comes in: the balancer, or the one URL given."""
        if self.balancer:
            return self.balancer
        return self.replicas[0] if len(self.replicas) == 1 else None

    @property
    def way_in(self) -> str:
        """Where the limits are met: the balancer, else the first URL given."""
        return self.balancer or self.replicas[0]

    @property
    def urls(self) -> list[str]:
        """Every URL given, the balancer last."""
        return [*self.replicas, *([self.balancer] if self.balancer else [])]

    def speaks(self, era: str) -> bool:
        """Whether every URL that answered speaks `era`."""
        return bool(self.targets) and all(era in t.eras for t in self.targets.values())

    @property
    def answers(self) -> TargetAnswers:
        """The answers to the tool's questions: drawn valid from each form, the fields the
        workload file states taken from it, and never a decline or a cancel (a call the
        doctor makes must reach its end)."""
        assert self.tool is not None
        drawn = answers_for(self.tool.name, self.workload)
        table = replace(drawn.table, decline_share=0.0, cancel_share=0.0)
        return TargetAnswers(table, drawn.workload)

    def arguments(self) -> dict[str, Any]:
        """One call's arguments, drawn from the tool's `inputSchema` (the ones the workload
        file states taken from it)."""
        assert self.tool is not None
        return ToolArguments(self.tool, self.answers.table, self.rng).next()

    def http(self) -> httpx.Client:
        """A fresh HTTP client (its own connections) with the doctor's timeout on each
        read, and on each whole reply too (a held stream's with the think time on top): a
        server that trickles its reply fails the check, naming the server."""
        settings = self.settings
        return deadline_client(
            settings.request_timeout_s + settings.think_time_s, settings.request_timeout_s
        )

    # -- the two halves of an MRTR call -----------------------------------------------

    def start(self, url: str, token: str | None = None) -> Round:
        """A call of the asking tool sent to `url`: its first round, which should ask."""
        exchange = Exchange(
            "tools/call",
            {"name": self.tool.name if self.tool else "", "arguments": self.arguments()},
            dict(CAPABILITIES),
            token=token if token is not None else self.auth.token,
        )
        return self.send(url, exchange)

    def start_sealed(
        self, url: str, token: str | None = None, attempts: int = SEALED_ATTEMPTS
    ) -> Round | None:
        """A call sent to `url` and answered there until a round asks with a
        `requestState` (the round a retry elsewhere must open); None when no call in
        `attempts` carried one (its arguments may decide whether it does)."""
        for _ in range(attempts):
            reached = self.start(url, token)
            for _ in range(MAX_ROUNDS):
                if not reached.asked or reached.request_state:
                    break
                reached = self.retry(url, reached, token)
            if reached.asked and reached.request_state:
                return reached
        return None

    def retry(self, url: str, first: Round, token: str | None = None) -> Round:
        """The retry of `first`'s call, answering its questions, sent to `url`. The call is
        taken as it stood when `first` ended, so one round may be retried more than once
        (on another replica, then on the one that sealed its state)."""
        exchange = Exchange(
            first.exchange.method,
            first.exchange.params,
            first.exchange.capabilities,
            token=first.exchange.token,
            input_requests=dict(first.input_requests),
            request_state=first.request_state,
        )
        exchange.answer(
            {
                key: self.answers(key, request, self.rng)
                for key, request in exchange.input_requests.items()
            }
        )
        if token is not None:
            exchange.token = token
        return self.send(url, exchange)

    def send(self, url: str, exchange: Exchange) -> Round:
        """One round of `exchange` to `url`: what came back, the error it carried."""
        headers, body = exchange.next_request()
        started = time.perf_counter()
        sent_s = time.monotonic()
        try:
            with self.http() as http:
                response = http.post(url, json=body, headers=headers)
        except httpx.HTTPError as error:
            failure = f"{type(error).__name__}: {error}"
            return Round(url, exchange, 0, transport_error=failure, sent_s=sent_s)
        message = reply_message(response.headers.get("content-type", ""), response.content)
        seen = dict(response.headers)
        try:
            exchange.record(body, response.status_code, message, time.perf_counter() - started)
        except McpError as error:
            return Round(
                url, exchange, response.status_code, error=error, headers=seen, sent_s=sent_s
            )
        return Round(
            url,
            exchange,
            response.status_code,
            headers=seen,
            completed=exchange.result is not None,
            asked=exchange.result is None and bool(exchange.input_requests),
            request_state=exchange.request_state,
            input_requests=dict(exchange.input_requests),
            sent_s=sent_s,
        )


@dataclass
class Round:
    """One round of a call as the doctor saw it: where it went, the call, the HTTP status,
    the JSON-RPC error it carried or a transport failure, the response's headers, and how
    the round ended (the call goes on after it, so this is kept as it was then)."""

    url: str
    exchange: Exchange
    status: int
    error: McpError | None = None
    transport_error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    #: The call has its final result.
    completed: bool = False
    #: The round ended input_required with questions.
    asked: bool = False
    request_state: str | None = None
    #: The questions the round asked, as they were then (a retry answers these).
    input_requests: dict[str, Any] = field(default_factory=dict)
    #: When the round was sent and when its answer came back (`time.monotonic()`): a state
    #: it carries was sealed between the two.
    sent_s: float = field(default_factory=time.monotonic)
    at_s: float = field(default_factory=time.monotonic)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.transport_error

    def said(self) -> str:
        """What came back, in one line."""
        if self.transport_error:
            return self.transport_error
        if self.error is not None:
            return f"HTTP {self.status}, {self.error.code}: {self.error.message}"
        if self.completed:
            return f"HTTP {self.status}, the call completed"
        return f"HTTP {self.status}, input_required"

"""One tool of an MCP server called by one client, one call at a time, each round timed.

An MRTR round is one POST. A legacy round runs from the POST that starts the call, or
carries an answer, to the next message for the client on the call's stream (a question or
the result; a notification is not the end of a round). Every question is answered at once,
as the caller's `Answerer` answers it (a target's users, `loadtest.target`). The floor
request is the era's cheapest (`server/discover`, `ping`): the time on the wire and in
the client. A `Pacer` keeps the client under a server's rate limit per principal.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from loadtest.target.reply_deadline import deadline_client
from loadtest.users.flows import run_mrtr_flow
from loadtest.users.http_interface import HttpReply, HttpxLegacy, Post, StreamReply
from loadtest.users.legacy_flow import SessionHolder, run_legacy_flow
from loadtest.users.simulated_user import Answerer, ThinkTime, lab_answer
from server.client import LegacyClient, MrtrClient, reply_message
from server.protocol.jsonrpc import json_object


@dataclass
class Timings:
    """One era's stretch: each round's latency and body sizes, and each floor request's;
    with the server's CPU in sight (`cpu`, a reader of its CPU seconds), each round's CPU:
    what the server ran between the end of the round before and the end of this one (the
    client's requests are paced, so nothing else of the client's runs there)."""

    rounds_s: list[float] = field(default_factory=list)
    request_bytes: list[int] = field(default_factory=list)
    response_bytes: list[int] = field(default_factory=list)
    floor_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    calls: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    cpu: Callable[[], float] | None = None
    _cpu_last: float = 0.0

    def start(self) -> None:
        """Before the first round: where the server's CPU count stands."""
        if self.cpu is not None:
            self._cpu_last = self.cpu()

    def round(self, latency_s: float, response_bytes: int) -> None:
        """A round ended: its latency, its answer's size and, if seen, the server's CPU."""
        self.rounds_s.append(latency_s)
        self.response_bytes.append(response_bytes)
        if self.cpu is not None:
            now = self.cpu()
            self.cpu_s.append(now - self._cpu_last)
            self._cpu_last = now


class Pacer:
    """Keeps one client's requests under `per_s` a second (a server's per-principal rate
    limit, such as the lab's, would otherwise refuse them): it waits before a request
    that would come too soon. Rounds never overlap, so the waits time nothing."""

    def __init__(self, per_s: float) -> None:
        self.gap_s = 1.0 / per_s if per_s > 0 else 0.0
        self.last = 0.0

    def wait(self) -> None:
        pause_s = self.last + self.gap_s - time.perf_counter()
        if pause_s > 0:
            time.sleep(pause_s)
        self.last = time.perf_counter()


def _size(body: Any) -> int:
    return len(orjson.dumps(body))


class TimedLegacy:
    """`LegacyHttp` on httpx that times each legacy round: from the POST that starts the
    call or carries an answer to the next message for the client on the call's stream."""

    def __init__(
        self, client: httpx.Client, url: str, auth: dict[str, str], timings: Timings, pacer: Pacer
    ) -> None:
        self.inner = HttpxLegacy(client, url)
        self.auth = auth
        self.timings = timings
        self.pacer = pacer
        self.sent = 0.0

    def post(self, headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
        self.pacer.wait()
        if body.get("method") is None:  # an answer: the next round starts now
            self.timings.request_bytes.append(_size(body))
            self.sent = time.perf_counter()
        reply: HttpReply = self.inner.post({**headers, **self.auth}, body)
        return reply

    def stream(
        self, headers: dict[str, str], body: dict[str, Any]
    ) -> AbstractContextManager[StreamReply]:
        return self._stream(headers, body)

    @contextmanager
    def _stream(self, headers: dict[str, str], body: dict[str, Any]) -> Iterator[StreamReply]:
        self.pacer.wait()
        self.timings.request_bytes.append(_size(body))
        self.sent = time.perf_counter()
        with self.inner.stream({**headers, **self.auth}, body) as reply:
            if reply.is_stream:
                reply = StreamReply(
                    reply.status, reply.served_by, True, None, self._timed(reply.lines)
                )
            elif reply.body is not None:
                self._round_ends(_size(reply.body))
            yield reply

    def _timed(self, lines: Callable[[], Iterator[str]]) -> Callable[[], Iterator[str]]:
        def timed() -> Iterator[str]:
            for line in lines():
                if line.startswith("data:"):
                    message = json_object(line[5:].strip()) or {}
                    # A question (a request with an id) or the call's answer ends a round;
                    # a notification (progress, a log line) does not.
                    if "id" in message:
                        self._round_ends(len(line) - 5)
                yield line

        return timed

    def _round_ends(self, response_bytes: int) -> None:
        self.timings.round(time.perf_counter() - self.sent, response_bytes)


def _timed_post(
    client: httpx.Client, url: str, auth: dict[str, str], timings: Timings, pacer: Pacer
) -> Post:
    """An MRTR `Post` that times each round and keeps its body sizes."""

    def timed(headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
        data = orjson.dumps(body)
        pacer.wait()
        started = time.perf_counter()
        try:
            response = client.post(url, content=data, headers={**headers, **auth})
        except httpx.TransportError:
            return HttpReply(0, None, None)
        timings.round(time.perf_counter() - started, len(response.content))
        timings.request_bytes.append(len(data))
        return HttpReply(
            response.status_code,
            response.headers.get("x-served-by"),
            reply_message(response.headers.get("content-type", ""), response.content),
            {k.lower(): v for k, v in response.headers.items()},
        )

    return timed


def time_floor(url: str, era: str, token: str | None, count: int, pacer: Pacer) -> list[float]:
    """Latencies of `count` of the era's cheapest requests, one at a time."""
    found = []
    client: MrtrClient | LegacyClient
    with deadline_client() as http:
        if era == "mrtr":
            client = MrtrClient(url, token=token, http=http)
        else:
            client = LegacyClient(url, token=token, http=http)
        with client:
            for _ in range(count):
                pacer.wait()
                started = time.perf_counter()
                if isinstance(client, MrtrClient):
                    client.discover()
                else:
                    client.ping()
                found.append(time.perf_counter() - started)
    return found


def call_tool(
    url: str,
    era: str,
    calls: list[tuple[str, dict[str, Any]]],
    token: str | None,
    pacer: Pacer,
    cpu: Callable[[], float] | None = None,
    answer: Answerer = lab_answer,
) -> Timings:
    """Each (tool, arguments) of `calls`, one call at a time, every round timed (and its
    CPU read with `cpu`, the server's CPU seconds), every question answered by `answer`."""
    timings = Timings(cpu=cpu)
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    rng = random.Random(0)
    think = ThinkTime(0.0, 0.0, rng)
    with deadline_client() as client:
        holder = SessionHolder()
        legacy = TimedLegacy(client, url, auth, timings, pacer)
        post = _timed_post(client, url, auth, timings, pacer)
        timings.start()
        for tool, arguments in calls:
            if era == "mrtr":
                record = run_mrtr_flow(
                    post, tool, arguments, think=think, rng=rng, max_retries=0, answer=answer
                )
            else:
                record = run_legacy_flow(
                    legacy, holder, tool, arguments, arch="legacy", think=think, rng=rng,
                    max_retries=0, answer=answer,
                )  # fmt: skip
            timings.calls += 1
            if record.outcome != "completed":
                timings.failed += 1
                timings.errors.append(record.error)
    return timings

"""The 2025-11-25 era through a balancer: a call's question comes on the stream its POST
holds open on one replica, and the answer is a separate POST, which the balancer must send
to that same replica (cookie or header affinity) or the call never completes. And the
stream is idle while the user thinks: the balancer must let it live that long.

Checks: `affinity` (calls that ask, their answers POSTed through the balancer, each call
in a session of its own) and `idle-stream` (one call answered after the think time).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from loadtest.doctor.deployment import CAPABILITIES, Deployment
from loadtest.doctor.finding import Finding, failed, not_checked, passed
from server.client import LegacySession, McpError, parse_body
from server.protocol.jsonrpc import json_object
from server.protocol.versions import LEGACY_VERSION

AFFINITY_FIX = (
    "make the balancer keep a session's requests on one replica: cookie affinity (HAProxy: "
    "`cookie SERVERID insert indirect nocache` and `cookie NAME` on each server line) or "
    "header affinity on Mcp-Session-Id (`balance hdr(Mcp-Session-Id)`); or keep the "
    "answers in a store every replica reads; or move your users to 2026-07-28, whose "
    "retries need no affinity"
)


@dataclass(frozen=True)
class HeldCall:
    """How one 2025-11-25 call through the balancer went: whether it asked, whether it
    completed, and what stopped it."""

    asked: bool
    completed: bool
    said: str


def legacy_call(
    deployment: Deployment, url: str, answer_url: str, *, think_time_s: float
) -> HeldCall:
    """One 2025-11-25 call of the asking tool in a session of its own, opened at `url`, its
    answers POSTed to `answer_url` after `think_time_s`, on one HTTP client (cookies kept)."""
    session = LegacySession(dict(CAPABILITIES), token=deployment.auth.token)
    asked = False
    try:
        with deployment.http() as http:
            headers, body = session.initialize_request()
            response = http.post(url, json=body, headers=headers)
            session.opened(response.status_code, response.headers, parse_body(response))
            headers, body = session.initialized_notification()
            http.post(url, json=body, headers=headers)
            assert deployment.tool is not None
            exchange = session.exchange(
                "tools/call", {"name": deployment.tool.name, "arguments": deployment.arguments()}
            )
            headers, body = exchange.next_request()
            with http.stream("POST", url, json=body, headers=headers) as stream:
                if not stream.headers.get("content-type", "").startswith("text/event-stream"):
                    stream.read()
                    exchange.take_json(stream.status_code, json_object(stream.content))
                    return HeldCall(False, exchange.done, "answered at once, asking nothing")
                for line in stream.iter_lines():
                    request = exchange.feed_line(line)
                    if request is not None:
                        asked = True
                        time.sleep(think_time_s)
                        _answer(deployment, http, answer_url, exchange, request)
                    if exchange.done:
                        break
            if not exchange.done:
                return HeldCall(asked, False, "the stream ended without a result")
            return HeldCall(asked, True, "completed")
    except McpError as error:
        return HeldCall(asked, False, f"HTTP {error.http_status}, {error.code}: {error.message}")
    except httpx.HTTPError as error:
        return HeldCall(asked, False, f"{type(error).__name__}: {error}")


def _answer(
    deployment: Deployment, http: httpx.Client, url: str, exchange: Any, request: dict[str, Any]
) -> None:
    """POST the user's answer to a question the stream asked; a refusal raises McpError."""
    answer = deployment.answers("", request, deployment.rng)
    headers, body = exchange.answer_request(request, answer)
    started = time.perf_counter()
    response = http.post(url, json=body, headers=headers)
    exchange.answered(
        body, response.status_code, json_object(response.content), time.perf_counter() - started
    )


def affinity(deployment: Deployment) -> Finding:
    """`affinity`: calls that ask, each answered through the balancer, all complete."""
    name = "affinity"
    if not deployment.speaks(LEGACY_VERSION):
        return not_checked(name, "the deployment does not speak 2025-11-25")
    if deployment.balancer is None:
        return not_checked(name, "no balancer given (--balancer URL)")
    if deployment.tool is None:
        return not_checked(name, "no tool of the deployment asks a question")
    rounds = max(2, deployment.settings.balancer_rounds // 2)
    calls = [
        legacy_call(deployment, deployment.balancer, deployment.balancer, think_time_s=0.0)
        for _ in range(rounds)
    ]
    lost = [call for call in calls if not call.completed]
    tool = deployment.tool.name
    if not lost:
        return passed(
            name,
            f"{rounds} 2025-11-25 calls of {tool} through {deployment.balancer}, each asking "
            "on its stream and answered by a separate POST, all completed",
        )
    return failed(
        name,
        f"{len(lost)} of {rounds} 2025-11-25 calls of {tool} through {deployment.balancer} "
        f"did not complete: {lost[0].said} (the answer or the call reached a replica that "
        "does not hold the session's stream)",
        AFFINITY_FIX,
    )


def idle_stream(deployment: Deployment) -> Finding:
    """`idle-stream`: a call whose user thinks for the think time still completes."""
    name = "idle-stream"
    think_s = deployment.settings.think_time_s
    if not deployment.speaks(LEGACY_VERSION) or deployment.tool is None:
        return not_checked(name, "no 2025-11-25 call that asks to hold open")
    url = deployment.entry
    if url is None:
        return not_checked(name, "no balancer given (--balancer URL)")
    call = legacy_call(deployment, url, url, think_time_s=think_s)
    if call.completed:
        return passed(
            name, f"a stream held idle for the think time ({think_s:g} s) at {url} lived on"
        )
    return failed(
        name,
        f"a call answered after the think time ({think_s:g} s) at {url} did not complete: "
        f"{call.said}",
        "let the balancer keep an idle stream open longer than your users think (HAProxy: "
        "`timeout server` and `timeout client` above the think time, or `timeout tunnel`), "
        "or have the server send keep-alive comments on held streams; if affinity failed, "
        "fix that first",
    )

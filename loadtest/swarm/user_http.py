"""One simulated user's HTTP client in the swarm: Locust's fast client, with the user's own
connections, cookies (whatever affinity the balancer sets) and credentials.

It implements the flows' `Post` and `LegacyHttp` (`loadtest.users.http_interface`); its
requests land in Locust's statistics by round kind and per replica. A reply is read as
JSON or, when the server chose to answer a POST as an SSE stream (the official SDK does
by default), as the response that stream carries.

A reply must be whole within `reply_deadline_s` (60 s) of its request, however its bytes trickle
(the client's own timeouts bound each read, not a reply): past it the request fails as a
transport error naming the server. A legacy call's stream is read line by line under the
per-read timeout only: it is held open while its user thinks.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import gevent

from loadtest.swarm.locust_stats import REPLICA_COUNTS, round_kind
from loadtest.target.reply_deadline import REPLY_DEADLINE_S
from loadtest.users.http_interface import HttpReply, StreamCut, StreamReply
from server.client import reply_message
from server.protocol.jsonrpc import json_object


class ReplyOutran(OSError):
    """A reply that did not end within its deadline (a transport failure to Locust)."""


class UserHttp:
    """One user's HTTP client: its own connections and cookies (the sticky balancer's), and
    its own principal. Implements the flows' `Post` and `LegacyHttp` on Locust's fast client,
    whose requests land in Locust's statistics by round kind and per replica."""

    def __init__(
        self,
        client: Any,
        auth: dict[str, str],
        path: str = "/mcp",
        reply_deadline_s: float = REPLY_DEADLINE_S,
    ) -> None:
        self.client = client
        self.auth = auth
        self.path = path
        self.reply_deadline_s = reply_deadline_s
        #: Why the last request that got no answer at all got none (a timeout, a refused
        #: connection), in the client's words; empty until one does.
        self.transport_error = ""

    def post(self, headers: dict[str, str], body: dict[str, Any]) -> HttpReply:
        """One POST; JSON-RPC errors count as Locust failures."""
        kind = round_kind(body)
        server = getattr(self.client, "base_url", "") or "the target"
        deadline_s = self.reply_deadline_s
        outran = ReplyOutran(
            f"the server at {server} did not finish its reply within {deadline_s:g} s"
        )
        with (
            gevent.Timeout(deadline_s, outran),
            self.client.post(
                self.path,
                data=json.dumps(body),
                headers={**headers, **self.auth},
                name=kind,
                catch_response=True,
            ) as response,
        ):
            REPLICA_COUNTS.add(header(response, "x-served-by"), kind)
            self._note_transport_error(response)
            # The head came, the body outran its deadline (Locust keeps why it stopped).
            stopped = (getattr(response, "request_meta", None) or {}).get("exception")
            if isinstance(stopped, ReplyOutran):
                self.transport_error = f"{type(stopped).__name__}: {stopped}"
                response.failure(self.transport_error)
                return HttpReply(0, header(response, "x-served-by"), None)
            parsed = reply_message(header(response, "content-type") or "", _content(response))
            judge(response, parsed)
            return HttpReply(
                response.status_code or 0,
                header(response, "x-served-by"),
                parsed,
                {k.lower(): v for k, v in (response.headers or {}).items()},
            )

    @contextlib.contextmanager
    def stream(self, headers: dict[str, str], body: dict[str, Any]) -> Iterator[StreamReply]:
        """A POST whose answer may be an SSE stream, read line by line as it arrives."""
        kind = round_kind(body, streamed=True)
        with self.client.post(
            self.path,
            data=json.dumps(body),
            headers={**headers, **self.auth},
            name=kind,
            stream=True,
            catch_response=True,
        ) as response:
            REPLICA_COUNTS.add(header(response, "x-served-by"), kind)
            self._note_transport_error(response)
            is_stream = (header(response, "content-type") or "").startswith("text/event-stream")
            parsed = None if is_stream else json_object(response.text)
            judge(response, parsed)

            def lines() -> Iterator[str]:
                raw = getattr(response, "_response", None)
                if raw is None:
                    raise StreamCut("no stream to read")
                try:
                    while line := raw.readline(b"\n"):
                        yield line.decode().rstrip("\n")
                except Exception as exc:  # the socket closed under us: a cut stream
                    raise StreamCut(f"stream broke: {type(exc).__name__}") from exc

            yield StreamReply(
                response.status_code or 0,
                header(response, "x-served-by"),
                is_stream,
                parsed,
                lines,
            )

    def _note_transport_error(self, response: Any) -> None:
        error = getattr(response, "error", None)
        if not response.status_code and error is not None:
            self.transport_error = f"{type(error).__name__}: {error}".rstrip(": ")


def header(response: Any, name: str) -> str | None:
    return response.headers.get(name) if response.headers else None


def judge(response: Any, parsed: dict[str, Any] | None) -> None:
    """Mark JSON-RPC errors and HTTP failures as Locust failures."""
    if parsed is not None and "error" in parsed:
        response.failure(f"JSON-RPC {parsed['error'].get('code')}")
    elif not response.status_code or response.status_code >= 400:
        response.failure(f"HTTP {response.status_code}")


def _content(response: Any) -> bytes:
    """A reply's body (none when the connection failed)."""
    try:
        return bytes(response.content or b"")
    except Exception:  # a failed request's response has no body to read
        return b""

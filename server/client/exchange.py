"""One logical MRTR request across its rounds: the client side of SEP-2322, without I/O.

One logical request (a tool call, say) may take several HTTP round trips. `Exchange`
holds the protocol logic and no I/O, so the same rules drive the async client, the sync
client and the load test's Locust users:

- every round is a fresh JSON-RPC request with a new id, the same method and params;
- `inputResponses` answer the previous round's `inputRequests`, key for key;
- `requestState` is echoed byte for byte, never read, and only when the server sent one;
- a result with state but no questions (load shedding) is retried at once after a short
  backoff; a cap on rounds stops a server that never finishes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from server.client.replies import Round, TooManyRounds, result_of, text_of
from server.protocol.headers import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_VERSION,
    METHOD_HEADER,
    NAME_HEADER,
    NAMED_METHODS,
    VERSION_HEADER,
)
from server.protocol.versions import MODERN_VERSION

CLIENT_INFO = {"name": "mrtr-lab-client", "version": "0.1.0"}

_ids = itertools.count(1)


@dataclass
class Exchange:
    """One logical request across its rounds: what to send next, what came back."""

    method: str
    params: dict[str, Any]
    capabilities: dict[str, Any]
    max_rounds: int = 10
    token: str | None = None
    client_info: dict[str, Any] = field(default_factory=lambda: dict(CLIENT_INFO))
    rounds: list[Round] = field(default_factory=list)
    result: dict[str, Any] | None = None
    input_requests: dict[str, Any] = field(default_factory=dict)
    request_state: str | None = None
    input_responses: dict[str, Any] | None = None

    def next_request(self) -> tuple[dict[str, str], dict[str, Any]]:
        """The headers and JSON body of the next round."""
        if len(self.rounds) >= self.max_rounds:
            raise TooManyRounds(-32603, f"no result after {self.max_rounds} rounds")
        params = dict(self.params)
        meta = dict(params.get("_meta") or {})
        meta.setdefault(META_VERSION, MODERN_VERSION)
        meta.setdefault(META_CLIENT_INFO, self.client_info)
        meta.setdefault(META_CAPABILITIES, self.capabilities)
        params["_meta"] = meta
        if self.input_responses is not None:
            params["inputResponses"] = self.input_responses
        if self.request_state is not None:
            params["requestState"] = self.request_state
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": self.method, "params": params}
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            VERSION_HEADER: meta[META_VERSION],
            METHOD_HEADER: self.method,
        }
        name_field = NAMED_METHODS.get(self.method)
        if name_field and isinstance(self.params.get(name_field), str):
            headers[NAME_HEADER] = self.params[name_field]
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers, body

    def record(
        self,
        body: dict[str, Any],
        status: int,
        response: dict[str, Any] | None,
        elapsed_s: float,
        served_by: str | None = None,
    ) -> bool:
        """Take in one round's response (and the replica that served it, if named); True
        when the logical request is complete."""
        self.rounds.append(Round(body, response, status, elapsed_s, served_by))
        result = result_of(response, status)
        if result.get("resultType", "complete") != "input_required":
            self.result = result
            return True
        self.input_requests = result.get("inputRequests") or {}
        # Echo exactly what was sent, and nothing when nothing was.
        self.request_state = result.get("requestState")
        self.input_responses = None
        return False

    def answer(self, responses: dict[str, Any]) -> None:
        """Set the answers the next round sends."""
        self.input_responses = responses if self.input_requests else None

    @property
    def needs_backoff(self) -> bool:
        """A state-only result: the server shed the call; retry soon, elsewhere."""
        return not self.input_requests

    @property
    def text(self) -> str:
        """The text content of the final result."""
        return text_of(self.result)

    def transcript(self) -> list[dict[str, Any]]:
        """Every round's request and response, for showing the wire traffic."""
        return [
            {"request": r.request, "response": r.response, "http_status": r.http_status}
            for r in self.rounds
        ]

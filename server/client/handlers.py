"""How a client answers what a server asks: one callback per kind of input request.

The same `Handlers` serve the MRTR client (answers go in the retry's `inputResponses`)
and the legacy client (answers are POSTed while the SSE stream waits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.client.replies import McpError
from server.protocol.inputs import ELICIT, LIST_ROOTS, SAMPLE

Answer = Callable[[dict[str, Any]], Any]
"""Answers one input request: receives its params, returns its result (or an awaitable)."""


@dataclass
class Handlers:
    """The client's answers to input requests, one callback per kind.

    A kind with no callback is not declared as a capability, so a well-behaved server
    never asks for it.
    """

    elicit: Answer | None = None
    sample: Answer | None = None
    list_roots: Answer | None = None

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {}
        if self.elicit:
            caps["elicitation"] = {"form": {}}
        if self.sample:
            caps["sampling"] = {}
        if self.list_roots:
            caps["roots"] = {}
        return caps

    def for_method(self, method: str) -> Answer:
        handler = {ELICIT: self.elicit, SAMPLE: self.sample, LIST_ROOTS: self.list_roots}.get(
            method
        )
        if handler is None:
            raise McpError(-32601, f"the client cannot answer {method}")
        return handler


def accept(**content: Any) -> dict[str, Any]:
    """An elicitation answer that accepts with `content`."""
    return {"action": "accept", "content": content}


def decline() -> dict[str, Any]:
    """An elicitation answer that declines."""
    return {"action": "decline"}


def sampled(text: str, model: str = "lab-model") -> dict[str, Any]:
    """A sampling answer carrying `text`."""
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model,
        "stopReason": "endTurn",
    }

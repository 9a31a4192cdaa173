"""Input requests: what a server may ask a client for in the middle of a request.

There are three kinds, each needing a client capability: an elicitation (ask the user,
`elicitation`), an LLM sample (`sampling`) and the client's roots (`roots`). An
`InputRequest` knows its wire form (an entry of `inputRequests`, or the params of a legacy
server-to-client request) and how to read an answer (an entry of `inputResponses`, or the
result of that legacy request). An answer that does not fit is treated as no answer: the
server asks again, as the seed's error-handling section prescribes. Here an answer's shape
is read; what a user typed is checked against the whole schema of the form by
`server.core.answer_schema`, and a question asked again says why (`InputRequest.again`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.protocol.jsonrpc import invalid_params

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
LIST_ROOTS = "roots/list"

CAPABILITY_OF = {ELICIT: "elicitation", SAMPLE: "sampling", LIST_ROOTS: "roots"}


@dataclass(slots=True)
class Elicited:
    """The user's answer to an elicitation: accept (with content), decline or cancel."""

    action: str
    content: dict[str, Any]

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@dataclass(slots=True)
class Sampled:
    """The client's LLM completion for a sampling request."""

    text: str
    model: str


@dataclass(slots=True)
class InputRequest:
    """One thing the server asks the client for, under a key the server chooses.

    A value, never changed once built; not a frozen dataclass only because a handler builds
    its requests again on every round, and a frozen one costs about three times as much to
    build (so do `Elicited`, `Sampled` and `server.core.call.Invocation`).
    """

    method: str
    params: dict[str, Any]

    @property
    def capability(self) -> str:
        """The client capability this request needs."""
        return CAPABILITY_OF[self.method]

    def to_wire(self) -> dict[str, Any]:
        """The entry of `inputRequests` for this request."""
        return {"method": self.method, "params": self.params}

    def again(self, reason: str) -> InputRequest:
        """This question asked again after an answer that did not fit, saying why."""
        params = dict(self.params)
        message = params.get("message")
        why = f"Your last answer was not accepted: {reason}"
        params["message"] = f"{message}\n\n{why}" if message else why
        return InputRequest(self.method, params)

    def parse(self, answer: Any) -> Elicited | Sampled | list[dict[str, Any]] | None:
        """Read an answer to this request, or None when it does not answer it."""
        if not isinstance(answer, dict):
            return None
        if self.method == ELICIT:
            return _parse_elicit(answer)
        if self.method == SAMPLE:
            return _parse_sample(answer)
        return _parse_roots(answer)


def input_responses(value: Any) -> dict[str, dict[str, Any]]:
    """`inputResponses` checked for shape: an object mapping each key to a result object."""
    if isinstance(value, dict):
        # A loop, not all() over a generator: one more function object per request.
        for answer in value.values():
            if not isinstance(answer, dict):
                break
        else:
            return value
    raise invalid_params("inputResponses must be an object mapping keys to result objects")


def answers(asked: dict[str, Any], answer: Any) -> bool:
    """Whether `answer` answers the input request `asked` (its wire form)."""
    return InputRequest(asked["method"], asked["params"]).parse(answer) is not None


def elicitation(message: str, schema: dict[str, Any]) -> InputRequest:
    """Ask the user to fill a flat form (`requestedSchema`) in form mode."""
    return InputRequest(ELICIT, {"mode": "form", "message": message, "requestedSchema": schema})


def sampling(
    prompt: str, *, max_tokens: int = 100, system_prompt: str | None = None
) -> InputRequest:
    """Ask the client's LLM to answer a one-message prompt."""
    params: dict[str, Any] = {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens,
    }
    if system_prompt:
        params["systemPrompt"] = system_prompt
    return InputRequest(SAMPLE, params)


def roots() -> InputRequest:
    """Ask the client which filesystem roots it exposes."""
    return InputRequest(LIST_ROOTS, {})


def _parse_elicit(answer: dict[str, Any]) -> Elicited | None:
    """An elicitation result's shape: an action, and with accept an object of content
    (whether the content fits the form is `server.core.answer_schema`'s to say)."""
    action = answer.get("action")
    if action != "accept":
        return Elicited(action, {}) if action == "decline" or action == "cancel" else None
    content = answer.get("content")
    if not isinstance(content, dict):
        return None
    return Elicited("accept", content)


def _parse_sample(answer: dict[str, Any]) -> Sampled | None:
    content = answer.get("content")
    # A sampling result carries one content block, or a list of them (2025-11-25 onwards).
    blocks = content if isinstance(content, list) else [content]
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    strings = [t for t in texts if isinstance(t, str)]
    if not texts or len(strings) != len(texts):
        return None
    model = answer.get("model")
    return Sampled("".join(strings), model if isinstance(model, str) else "")


def _parse_roots(answer: dict[str, Any]) -> list[dict[str, Any]] | None:
    found = answer.get("roots")
    if not isinstance(found, list) or not all(
        isinstance(r, dict) and isinstance(r.get("uri"), str) for r in found
    ):
        return None
    return found

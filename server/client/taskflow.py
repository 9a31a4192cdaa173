"""A tool call run as a task, from `tools/call` to its result: the client side, without I/O.

Two wire forms: the seed's (v1 task methods plus `tasks/input_response`) and the
released extension's (`tasks/get` carries everything, `tasks/update` answers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from server.client.exchange import Exchange
from server.client.replies import McpError, text_of
from server.protocol.headers import RELATED_TASK, TASKS_EXTENSION

#: The two forms of the task methods: the seed's (v1 methods plus `tasks/input_response`)
#: and the released extension's.
SEED = "seed"
EXTENSION = "extension"


def task_capabilities(capabilities: dict[str, Any], wire: str) -> dict[str, Any]:
    """`capabilities` plus the declaration that opts into tasks in the given form."""
    if wire == EXTENSION:
        extensions = {**(capabilities.get("extensions") or {}), TASKS_EXTENSION: {}}
        return {**capabilities, "extensions": extensions}
    return {**capabilities, "tasks": {}}


@dataclass
class TaskFlow:
    """A tool call run as a task, from `tools/call` to its result: what to send next.

    No I/O, like `Exchange`; every message is a one-round `Exchange`. The loop is: poll
    `tasks/get` every `pollInterval`; when the task needs input, get the questions and
    answer them; when it is done, get the result.

    - seed: the questions and the result come from `tasks/result`; answers go in
      `tasks/input_response` with the related-task `_meta`.
    - extension: `tasks/get` carries the questions and the result; answers go in
      `tasks/update`.

    A tool may ask the MRTR way before it becomes a task (`creation` holds those rounds),
    or finish without becoming one (then `result` is set at once).
    """

    wire: str
    capabilities: dict[str, Any]
    token: str | None = None
    creation: Exchange | None = None
    #: The task as last reported (taskId, status, statusMessage, ttl, pollInterval...).
    task: dict[str, Any] = field(default_factory=dict)
    #: Open questions once known, and the answers waiting to be sent.
    input_requests: dict[str, Any] | None = None
    input_responses: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: Every task message after creation, in order.
    messages: list[Exchange] = field(default_factory=list)
    #: Whether the seed's `tasks/result` is due (the task needs input or is done).
    _fetch: bool = field(default=False, init=False, repr=False)

    def create(
        self, name: str, arguments: dict[str, Any], *, ttl_ms: int | None, max_rounds: int
    ) -> Exchange:
        """The `tools/call` that starts the flow (run it through all its MRTR rounds)."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if self.wire == SEED:
            params["task"] = {"ttl": ttl_ms} if ttl_ms is not None else {}
        self.creation = Exchange(
            "tools/call", params, self.capabilities, max_rounds=max_rounds, token=self.token
        )
        return self.creation

    def created(self) -> None:
        """Take in the creation's final result: a task, or the tool's own result."""
        result = (self.creation.result if self.creation else None) or {}
        if result.get("resultType") != "task":
            self.result = result
            return
        self.task = dict(result["task"]) if self.wire == SEED else _task_fields(result)

    @property
    def task_id(self) -> str | None:
        return self.task.get("taskId")

    @property
    def status(self) -> str | None:
        return self.task.get("status")

    @property
    def poll_interval_s(self) -> float:
        interval_ms = self.task.get("pollIntervalMs", self.task.get("pollInterval"))
        return (interval_ms if isinstance(interval_ms, int | float) else 1000) / 1000

    @property
    def next_step(self) -> str:
        """`answer` the open questions, `send` the next message now, `wait` then send, `done`."""
        if self.result is not None or self.error is not None or self.status == "cancelled":
            return "done"
        if self.input_responses is not None or self._fetch:
            return "send"
        if self.input_requests:
            return "answer"
        return "wait"

    def answer(self, responses: dict[str, Any]) -> None:
        """Set the answers the next message sends."""
        self.input_responses = responses

    def next_exchange(self) -> Exchange:
        """The next message, as a one-round exchange."""
        task_id = self.task_id
        if self.input_responses is not None and self.wire == SEED:
            method = "tasks/input_response"
            params: dict[str, Any] = {
                "inputResponses": self.input_responses,
                "_meta": {RELATED_TASK: {"taskId": task_id}},
            }
        elif self.input_responses is not None:
            method, params = (
                "tasks/update",
                {"taskId": task_id, "inputResponses": self.input_responses},
            )
        elif self._fetch:
            method, params = "tasks/result", {"taskId": task_id}
        else:
            method, params = "tasks/get", {"taskId": task_id}
        exchange = Exchange(method, params, self.capabilities, max_rounds=1, token=self.token)
        self.messages.append(exchange)
        return exchange

    def take(self, exchange: Exchange) -> None:
        """Take in the response to the message `next_exchange` made."""
        result = (exchange.rounds[-1].response or {})["result"]
        if exchange.method == "tasks/get":
            self.task = _task_fields(result)
            if self.wire == SEED:
                self._fetch = self.status in ("input_required", "completed", "failed")
                self.input_requests = None
            else:
                self.input_requests = result.get("inputRequests")
                self.result = result.get("result")
                self.error = result.get("error")
        elif exchange.method == "tasks/result":
            self._fetch = False
            if result.get("resultType") == "input_required":
                self.input_requests = result.get("inputRequests") or {}
            else:
                self.result = result
        else:  # the answers were acknowledged; the task reports on the next poll
            self.input_responses = None
            self.input_requests = None

    def raise_for_error(self) -> None:
        """Raise the task's error if it failed (extension; the seed's tasks/result raises)."""
        if self.error is not None:
            error = self.error
            raise McpError(error.get("code", -32603), error.get("message", ""), error.get("data"))

    @property
    def text(self) -> str:
        """The text content of the final result."""
        return text_of(self.result)

    def transcript(self) -> list[dict[str, Any]]:
        """Every request and response of the flow, creation first."""
        exchanges = ([self.creation] if self.creation else []) + self.messages
        return [step for exchange in exchanges for step in exchange.transcript()]


def _task_fields(result: dict[str, Any]) -> dict[str, Any]:
    inlined = ("resultType", "inputRequests", "result", "error", "_meta")
    return {k: v for k, v in result.items() if k not in inlined}

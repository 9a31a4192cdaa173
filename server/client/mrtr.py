"""The reference MRTR client: the client side of SEP-2322, small enough to read.

One logical request (a tool call, say) may take several HTTP round trips. `Exchange`
holds the protocol logic and no I/O, so the same rules drive the async client, the sync
client and the load test's Locust users:

- every round is a fresh JSON-RPC request with a new id, the same method and params;
- `inputResponses` answer the previous round's `inputRequests`, key for key;
- `requestState` is echoed byte for byte, never read, and only when the server sent one;
- a result with state but no questions (load shedding) is retried at once after a short
  backoff; a cap on rounds stops a server that never finishes.

Each round is recorded (request and response JSON, status, time) so notebooks can show
the wire traffic.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from server.protocol.headers import NAMED_METHODS
from server.protocol.inputs import ELICIT, LIST_ROOTS, SAMPLE

PROTOCOL_VERSION = "2026-07-28"
CLIENT_INFO = {"name": "mrtr-lab-client", "version": "0.1.0"}
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: The two forms of the task methods: the seed's (v1 methods plus `tasks/input_response`)
#: and the released extension's.
SEED = "seed"
EXTENSION = "extension"

Answer = Callable[[dict[str, Any]], Any]
"""Answers one input request: receives its params, returns its result (or an awaitable)."""

_ids = itertools.count(1)


class McpError(Exception):
    """A JSON-RPC error from the server (or a transport failure), with its HTTP status."""

    def __init__(self, code: int, message: str, data: Any = None, http_status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status


def result_of(response: dict[str, Any] | None, status: int) -> dict[str, Any]:
    """The result of a JSON-RPC response, or the McpError it carries instead."""
    if response is None:
        raise McpError(-32603, f"HTTP {status} without a JSON-RPC response", None, status)
    if "error" in response:
        error = response["error"] or {}
        raise McpError(
            error.get("code", -32603), error.get("message", ""), error.get("data"), status
        )
    result = response.get("result")
    if not isinstance(result, dict):
        raise McpError(-32603, "response without a result object", None, status)
    return result


def text_of(result: dict[str, Any] | None) -> str:
    """The text content of a tool result."""
    content = (result or {}).get("content") or []
    return "".join(c.get("text", "") for c in content if c.get("type") == "text")


class TooManyRounds(McpError):
    """The server kept asking past the client's round cap."""


@dataclass
class Round:
    """One HTTP round trip of a logical request, as it went over the wire."""

    request: dict[str, Any]
    response: dict[str, Any] | None
    http_status: int
    elapsed_s: float


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
        meta.setdefault("io.modelcontextprotocol/protocolVersion", PROTOCOL_VERSION)
        meta.setdefault("io.modelcontextprotocol/clientInfo", self.client_info)
        meta.setdefault("io.modelcontextprotocol/clientCapabilities", self.capabilities)
        params["_meta"] = meta
        if self.input_responses is not None:
            params["inputResponses"] = self.input_responses
        if self.request_state is not None:
            params["requestState"] = self.request_state
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": self.method, "params": params}
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": meta["io.modelcontextprotocol/protocolVersion"],
            "Mcp-Method": self.method,
        }
        name_field = NAMED_METHODS.get(self.method)
        if name_field and isinstance(self.params.get(name_field), str):
            headers["Mcp-Name"] = self.params[name_field]
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers, body

    def record(
        self, body: dict[str, Any], status: int, response: dict[str, Any] | None, elapsed_s: float
    ) -> bool:
        """Take in one round's response; True when the logical request is complete."""
        self.rounds.append(Round(body, response, status, elapsed_s))
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


def parse_body(response: httpx.Response) -> dict[str, Any] | None:
    """The JSON-RPC response in an HTTP response, from JSON or from the last SSE event."""
    content_type = response.headers.get("content-type", "")
    if content_type.startswith("text/event-stream"):
        message = None
        for line in response.text.splitlines():
            if line.startswith("data:"):
                candidate = json.loads(line[5:])
                if "result" in candidate or "error" in candidate:
                    message = candidate
        return message
    try:
        return response.json()
    except ValueError:
        return None


class _ClientBase:
    """What both clients share: where to send, how to answer, and the request shortcuts."""

    def __init__(
        self,
        url: str,
        *,
        handlers: Handlers | None = None,
        token: str | None = None,
        max_rounds: int = 10,
        backoff_s: float = 0.05,
    ) -> None:
        self.url = url
        self.handlers = handlers or Handlers()
        self.token = token
        self.max_rounds = max_rounds
        self.backoff_s = backoff_s

    def exchange(self, method: str, params: dict[str, Any] | None = None) -> Exchange:
        """A new logical request, not yet sent."""
        return Exchange(
            method,
            params or {},
            self.handlers.capabilities(),
            max_rounds=self.max_rounds,
            token=self.token,
        )

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """`tools/call`, all rounds (a coroutine for the async client)."""
        return self.request("tools/call", {"name": name, "arguments": arguments or {}})

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Any:
        """`prompts/get`, all rounds."""
        return self.request("prompts/get", {"name": name, "arguments": arguments or {}})

    def read_resource(self, uri: str) -> Any:
        """`resources/read`, all rounds."""
        return self.request("resources/read", {"uri": uri})

    def task_flow(self, wire: str = SEED) -> TaskFlow:
        """A new task flow, not yet started, declaring task support in the form `wire`."""
        return TaskFlow(wire, task_capabilities(self.handlers.capabilities(), wire), self.token)


class AsyncMrtrClient(_ClientBase):
    """An async MRTR client on httpx; answers input requests concurrently."""

    def __init__(
        self,
        url: str,
        *,
        http: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        **options: Any,
    ) -> None:
        super().__init__(url, **options)
        self._http = http or httpx.AsyncClient(transport=transport, timeout=30.0)
        self._owns_http = http is None

    async def __aenter__(self) -> AsyncMrtrClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def send(self, exchange: Exchange) -> bool:
        """Send one round of `exchange`; True when it completed."""
        headers, body = exchange.next_request()
        started = time.perf_counter()
        response = await self._http.post(self.url, json=body, headers=headers)
        return exchange.record(body, response.status_code, parse_body(response), _since(started))

    async def run(self, exchange: Exchange) -> Exchange:
        """Drive `exchange` through all its rounds to a complete result."""
        while not await self.send(exchange):
            if exchange.needs_backoff:
                await asyncio.sleep(self.backoff_s)
                continue
            exchange.answer(await self._answer_all(exchange.input_requests))
        return exchange

    async def _answer_all(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        keys = list(input_requests)
        answers = await asyncio.gather(*(self._answer(input_requests[k]) for k in keys))
        return dict(zip(keys, answers, strict=True))

    async def _answer(self, request: dict[str, Any]) -> Any:
        answer = self.handlers.for_method(request.get("method", ""))(request.get("params") or {})
        return await answer if inspect.isawaitable(answer) else answer

    async def call_tool_as_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        wire: str = SEED,
        ttl_ms: int | None = None,
        timeout_s: float = 60.0,
    ) -> TaskFlow:
        """`tools/call` as a task, then poll, answer and fetch until the task is done."""
        flow = self.task_flow(wire)
        await self.run(
            flow.create(name, arguments or {}, ttl_ms=ttl_ms, max_rounds=self.max_rounds)
        )
        flow.created()
        return await self.run_task(flow, timeout_s=timeout_s)

    async def run_task(self, flow: TaskFlow, *, timeout_s: float = 60.0) -> TaskFlow:
        """Drive a started task flow until the task is done (or `timeout_s` passes)."""
        deadline = time.monotonic() + timeout_s
        while (step := flow.next_step) != "done":
            if time.monotonic() > deadline:
                raise McpError(-32603, f"task {flow.task_id} not done after {timeout_s:g} s")
            if step == "answer":
                flow.answer(await self._answer_all(flow.input_requests or {}))
                continue
            if step == "wait":
                await asyncio.sleep(flow.poll_interval_s)
            exchange = flow.next_exchange()
            await self.send(exchange)
            flow.take(exchange)
        flow.raise_for_error()
        return flow

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Exchange:
        """Any request, all rounds."""
        return await self.run(self.exchange(method, params))

    async def discover(self) -> dict[str, Any]:
        return (await self.request("server/discover")).result or {}

    async def list_tools(self) -> list[dict[str, Any]]:
        return ((await self.request("tools/list")).result or {}).get("tools", [])


class MrtrClient(_ClientBase):
    """The blocking twin of `AsyncMrtrClient`, for scripts and notebooks."""

    def __init__(
        self,
        url: str,
        *,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        **options: Any,
    ) -> None:
        super().__init__(url, **options)
        self._http = http or httpx.Client(transport=transport, timeout=30.0)
        self._owns_http = http is None

    @classmethod
    def for_app(cls, app: Any, **options: Any) -> MrtrClient:
        """A client talking to an ASGI app in this process: no ports, no network."""
        from starlette.testclient import TestClient

        client = cls(
            "http://127.0.0.1/mcp", http=TestClient(app, base_url="http://127.0.0.1"), **options
        )
        client._owns_http = True
        return client

    def __enter__(self) -> MrtrClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def send(self, exchange: Exchange) -> bool:
        """Send one round of `exchange`; True when it completed."""
        headers, body = exchange.next_request()
        started = time.perf_counter()
        response = self._http.post(self.url, json=body, headers=headers)
        return exchange.record(body, response.status_code, parse_body(response), _since(started))

    def run(self, exchange: Exchange) -> Exchange:
        """Drive `exchange` through all its rounds to a complete result."""
        while not self.send(exchange):
            if exchange.needs_backoff:
                time.sleep(self.backoff_s)
                continue
            exchange.answer(self._answer_all(exchange.input_requests))
        return exchange

    def _answer_all(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        return {
            key: self.handlers.for_method(req.get("method", ""))(req.get("params") or {})
            for key, req in input_requests.items()
        }

    def call_tool_as_task(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        wire: str = SEED,
        ttl_ms: int | None = None,
        timeout_s: float = 60.0,
    ) -> TaskFlow:
        """`tools/call` as a task, then poll, answer and fetch until the task is done."""
        flow = self.task_flow(wire)
        self.run(flow.create(name, arguments or {}, ttl_ms=ttl_ms, max_rounds=self.max_rounds))
        flow.created()
        return self.run_task(flow, timeout_s=timeout_s)

    def run_task(self, flow: TaskFlow, *, timeout_s: float = 60.0) -> TaskFlow:
        """Drive a started task flow until the task is done (or `timeout_s` passes)."""
        deadline = time.monotonic() + timeout_s
        while (step := flow.next_step) != "done":
            if time.monotonic() > deadline:
                raise McpError(-32603, f"task {flow.task_id} not done after {timeout_s:g} s")
            if step == "answer":
                flow.answer(self._answer_all(flow.input_requests or {}))
                continue
            if step == "wait":
                time.sleep(flow.poll_interval_s)
            exchange = flow.next_exchange()
            self.send(exchange)
            flow.take(exchange)
        flow.raise_for_error()
        return flow

    def request(self, method: str, params: dict[str, Any] | None = None) -> Exchange:
        """Any request, all rounds."""
        return self.run(self.exchange(method, params))

    def discover(self) -> dict[str, Any]:
        return self.request("server/discover").result or {}

    def list_tools(self) -> list[dict[str, Any]]:
        return (self.request("tools/list").result or {}).get("tools", [])


def _since(started: float) -> float:
    return time.perf_counter() - started


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

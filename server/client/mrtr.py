"""The reference MRTR clients (protocol 2026-07-28), async and blocking, on httpx.

Each drives `Exchange` (one logical request across its rounds) and `TaskFlow` (a tool
call run as a task) over HTTP, answering input requests with its `Handlers`. The
protocol rules live in those two; a client only sends, waits and answers.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any, cast

import httpx

from server.client.exchange import Exchange
from server.client.http import AsyncHttpClient, BlockingHttpClient
from server.client.replies import SERVED_BY_HEADER, McpError, parse_body
from server.client.taskflow import SEED, TaskFlow


class AsyncMrtrClient(AsyncHttpClient):
    """An async MRTR client on httpx; answers input requests concurrently."""

    async def __aenter__(self) -> AsyncMrtrClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def exchange(self, method: str, params: dict[str, Any] | None = None) -> Exchange:
        """A new logical request, not yet sent."""
        return self.options.exchange(method, params)

    def task_flow(self, wire: str = SEED) -> TaskFlow:
        """A new task flow, not yet started, declaring task support in the form `wire`."""
        return self.options.task_flow(wire)

    async def send(self, exchange: Exchange) -> bool:
        """Send one round of `exchange`; True when it completed."""
        headers, body = exchange.next_request()
        started = time.perf_counter()
        response = await self._http.post(self.url, json=body, headers=headers)
        return _record(exchange, body, response, started)

    async def run(self, exchange: Exchange) -> Exchange:
        """Drive `exchange` through all its rounds to a complete result."""
        while not await self.send(exchange):
            if exchange.needs_backoff:
                await asyncio.sleep(self.options.backoff_s)
                continue
            exchange.answer(await self._answer_all(exchange.input_requests))
        return exchange

    async def _answer_all(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        keys = list(input_requests)
        answers = await asyncio.gather(*(self._answer(input_requests[k]) for k in keys))
        return dict(zip(keys, answers, strict=True))

    async def _answer(self, request: dict[str, Any]) -> Any:
        answer = self.options.handlers.for_method(request.get("method", ""))(
            request.get("params") or {}
        )
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
            flow.create(name, arguments or {}, ttl_ms=ttl_ms, max_rounds=self.options.max_rounds)
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
        return await self.run(self.options.exchange(method, params))

    async def discover(self) -> dict[str, Any]:
        return (await self.request("server/discover")).result or {}

    async def list_tools(self) -> list[dict[str, Any]]:
        return ((await self.request("tools/list")).result or {}).get("tools", [])


class MrtrClient(BlockingHttpClient):
    """The blocking twin of `AsyncMrtrClient`, for scripts and notebooks."""

    @classmethod
    def for_app(cls, app: Any, **options: Any) -> MrtrClient:
        """A client talking to an ASGI app in this process: no ports, no network."""
        from starlette.testclient import TestClient

        # Starlette's TestClient is an httpx.Client that sends to the app in process.
        http = cast(httpx.Client, TestClient(app, base_url="http://127.0.0.1"))
        client = cls("http://127.0.0.1/mcp", http=http, **options)
        client._owns_http = True
        return client

    def __enter__(self) -> MrtrClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def exchange(self, method: str, params: dict[str, Any] | None = None) -> Exchange:
        """A new logical request, not yet sent."""
        return self.options.exchange(method, params)

    def task_flow(self, wire: str = SEED) -> TaskFlow:
        """A new task flow, not yet started, declaring task support in the form `wire`."""
        return self.options.task_flow(wire)

    def send(self, exchange: Exchange) -> bool:
        """Send one round of `exchange`; True when it completed."""
        headers, body = exchange.next_request()
        started = time.perf_counter()
        response = self._http.post(self.url, json=body, headers=headers)
        return _record(exchange, body, response, started)

    def run(self, exchange: Exchange) -> Exchange:
        """Drive `exchange` through all its rounds to a complete result."""
        while not self.send(exchange):
            if exchange.needs_backoff:
                time.sleep(self.options.backoff_s)
                continue
            exchange.answer(self._answer_all(exchange.input_requests))
        return exchange

    def _answer_all(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        return {
            key: self.options.handlers.for_method(req.get("method", ""))(req.get("params") or {})
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
        flow = self.options.task_flow(wire)
        self.run(
            flow.create(name, arguments or {}, ttl_ms=ttl_ms, max_rounds=self.options.max_rounds)
        )
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
        return self.run(self.options.exchange(method, params))

    def discover(self) -> dict[str, Any]:
        return self.request("server/discover").result or {}

    def list_tools(self) -> list[dict[str, Any]]:
        return (self.request("tools/list").result or {}).get("tools", [])


def _record(
    exchange: Exchange, body: dict[str, Any], response: httpx.Response, started: float
) -> bool:
    """Take one HTTP response into `exchange`, with the replica a balancer named."""
    elapsed_s = time.perf_counter() - started
    served_by = response.headers.get(SERVED_BY_HEADER)
    return exchange.record(body, response.status_code, parse_body(response), elapsed_s, served_by)

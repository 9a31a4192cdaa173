"""A request being served, and the strategy that runs its handler.

`Call` is one client request (message, caller, headers). A method that runs a handler
(`tools/call`, `prompts/get`, `resources/read`) resolves it to an `Invocation` and hands
that to an `Attempt`: the strategy that decides how a handler asking for input is served.
The replica composes the strategies once (`server.app`): on the 2026-07-28 path a task
attempt wraps an MRTR attempt; on the 2025-11-25 path an SSE attempt holds the stream.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from server.core.catalog import Handler, Tool
from server.core.context import Caller, Channel
from server.protocol.jsonrpc import Message


@dataclass(slots=True, kw_only=True)
class Call(Caller):
    """One client request being served: the message, who sent it, with what abilities."""

    message: Message
    headers: Mapping[str, str] | None = None
    #: The channel the transport already holds for this call (a legacy SSE stream);
    #: None on the 2026-07-28 path, where each attempt opens its own from the request.
    channel: Channel | None = None


@dataclass(slots=True)
class Invocation:
    """What a request runs: a handler, its target's name, and its checked arguments."""

    handler: Handler
    name: str
    arguments: dict[str, Any]
    #: The tool, for `tools/call` (a tool may run as a task); None for prompts, resources.
    tool: Tool | None = None
    #: Whether `ctx.become_task()` creates a task (the client let this call become one).
    may_become_task: bool = False


class Attempt(Protocol):
    """A strategy for running an invocation's handler; returns the method's result."""

    def __call__(self, call: Call, invocation: Invocation) -> Awaitable[dict[str, Any]]: ...


Method = Callable[[Call], Awaitable[dict[str, Any]]]
"""A JSON-RPC method of the table: a call in, its result out (errors as `RpcError`)."""

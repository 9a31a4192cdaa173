"""What every reference client is configured with, and the request shortcuts they share.

`ClientOptions` is held by each client (MRTR or legacy, blocking or async): how it
answers input requests, the bearer token it sends, and its limits. `Shortcuts` gives any
client that can send a whole request (`request`) the usual named requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from server.client.exchange import Exchange
from server.client.handlers import Handlers
from server.client.taskflow import SEED, TaskFlow, task_capabilities


@dataclass
class ClientOptions:
    """How a client answers, who it says it is, and how long it keeps trying."""

    handlers: Handlers = field(default_factory=Handlers)
    #: A bearer token (JWT) naming the principal; None calls anonymously.
    token: str | None = None
    #: Rounds one logical request may take before the client gives up.
    max_rounds: int = 10
    #: Pause before retrying a result that carries state but no questions (shed load).
    backoff_s: float = 0.05

    def __post_init__(self) -> None:
        if self.handlers is None:  # callers may pass handlers=None for "answer nothing"
            self.handlers = Handlers()

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these handlers declare."""
        return self.handlers.capabilities()

    def exchange(self, method: str, params: dict[str, Any] | None = None) -> Exchange:
        """A new logical MRTR request, not yet sent."""
        return Exchange(
            method,
            params or {},
            self.capabilities(),
            max_rounds=self.max_rounds,
            token=self.token,
        )

    def task_flow(self, wire: str = SEED) -> TaskFlow:
        """A new task flow, not yet started, declaring task support in the form `wire`."""
        return TaskFlow(wire, task_capabilities(self.capabilities(), wire), self.token)


class Shortcuts:
    """Named requests for a client that sends whole requests with `request`.

    For the async clients each shortcut returns the coroutine `request` returns.
    """

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """`tools/call`, answered to the end."""
        return self.request("tools/call", {"name": name, "arguments": arguments or {}})

    def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> Any:
        """`prompts/get`, answered to the end."""
        return self.request("prompts/get", {"name": name, "arguments": arguments or {}})

    def read_resource(self, uri: str) -> Any:
        """`resources/read`, answered to the end."""
        return self.request("resources/read", {"uri": uri})

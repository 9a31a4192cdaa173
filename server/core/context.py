"""The tool API: what a tool, prompt or resource handler sees while it runs.

One API serves both protocol eras. A handler asks for input with
``login = await ctx.elicit("github_login", message, schema)``; what happens then depends
on the channel the transport gave the context:

- MRTR (2026-07-28): if the answer is already here (carried in requestState or sent in
  `inputResponses`) the call returns it at once; otherwise this attempt ends with
  `InputRequired`, the server answers `input_required`, and the handler runs again from the
  top on the client's retry. Handlers are therefore written to be re-run: cheap work before
  the question, and anything expensive checkpointed in `ctx.state`.
- Legacy (2025-11-25): the request is sent on the open SSE stream and the call waits for
  the answer, holding the coroutine (and its memory) while the user thinks.

The difference in cost between re-running and holding is exactly what the lab measures.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from server.core.answer_schema import schema_problem
from server.protocol.inputs import Elicited, InputRequest, Sampled, elicitation, roots, sampling
from server.protocol.jsonrpc import MISSING_CLIENT_CAPABILITY, RpcError

if TYPE_CHECKING:
    from server.core.cpu_pool import CpuPool


class InputRequired(Exception):
    """This attempt needs answers first: under MRTR it becomes an InputRequiredResult.

    Raised as `InputRequired(requests)`. Every round that asks raises one, so it keeps
    its questions in the exception's own `args` (no `__init__` of its own to run) and
    builds no message unless printed.
    """

    @property
    def requests(self) -> dict[str, InputRequest]:
        """The questions still open, by key."""
        requests: dict[str, InputRequest] = self.args[0]
        return requests

    def __str__(self) -> str:
        return f"input required: {', '.join(self.requests)}"


class Offload(Exception):
    """The replica sheds this call: return its progress in requestState, no inputRequests."""


class BecomeTask(Exception):
    """This attempt switches to the persistent workflow: the server creates a task.

    Raised by `Context.become_task` during an ephemeral (MRTR) attempt of a tool the client
    may run as a task. The MRTR runner adds the answers this attempt consumed; the task
    runs the handler again from the top with them and with `state`.
    """

    def __init__(self, message: str, state: dict[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.state = state
        self.answers: dict[str, Any] = {}


def missing_capability(capabilities: set[str]) -> RpcError:
    """The error for a request that needs a client capability the client did not declare."""
    return RpcError(
        MISSING_CLIENT_CAPABILITY,
        f"Missing required client capability: {', '.join(sorted(capabilities))}",
        {"requiredCapabilities": {c: {} for c in sorted(capabilities)}},
        http_status=400,
    )


class Channel(Protocol):
    """How a context gets answers from the client: MRTR rounds or a legacy SSE stream."""

    #: Whether the handler may end this attempt and resume elsewhere (MRTR only).
    can_offload: bool

    async def ask(self, requests: dict[str, InputRequest]) -> dict[str, Any]:
        """Return an answer for every key, or end the attempt (MRTR)."""
        ...


#: Answers a stateless retry may carry beyond those its handler used (see `to_carry`).
UNASKED_CARRY_LIMIT = 8


class MrtrChannel:
    """Answers from this round's `inputResponses` and from earlier rounds' requestState.

    `used` collects every raw answer the handler consumed. If the attempt ends with more
    questions, every answer given so far (`to_carry`) is sealed into the next requestState,
    so the user is never asked twice.
    """

    can_offload = True

    def __init__(
        self,
        carried: dict[str, Any],
        responses: dict[str, Any],
        client_capabilities: dict[str, Any],
    ) -> None:
        self.carried = carried
        self.responses = responses
        self.client_capabilities = client_capabilities
        self.used: dict[str, Any] = {}
        #: Keys whose answer did not fit the form: asked again, and not carried on.
        self.rejected: set[str] = set()

    def to_carry(self, asked: set[str] | None) -> dict[str, Any]:
        """Every answer the user gave in this logical request to a question asked, for the
        next state.

        Not only the answers this handler used: during a rolling upgrade the retry may land
        on an older version that still wants an answer the newer one dropped (the seed's
        `google_login`), and nothing the user said should be lost either way. But only
        answers to questions the server asked (`asked`, from the state): keys nobody asked
        for are not sealed, so a client cannot inflate the state. A retry with no state to
        say what was asked keeps at most `UNASKED_CARRY_LIMIT` such answers.
        """
        used = self.used
        rejected = self.rejected
        unused: dict[str, Any] = {}
        for key, answer in self.responses.items():
            if key not in used and key not in rejected and (asked is None or key in asked):
                unused[key] = answer
        if asked is None and len(unused) > UNASKED_CARRY_LIMIT:
            unused = {}
        carried = self.carried
        if rejected:
            carried = {key: answer for key, answer in carried.items() if key not in rejected}
        return {**carried, **unused, **used}

    async def ask(self, requests: dict[str, InputRequest]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        missing: dict[str, InputRequest] = {}
        for key, request in requests.items():
            # An answer carried from an earlier round first, else one sent with this one;
            # one that does not fit the form is no answer, and the question says why.
            problem = None
            raw = self.carried.get(key)
            parsed = request.parse(raw) if raw is not None else None
            if parsed is not None and (problem := schema_problem(request, parsed)):
                parsed = None
            if parsed is None:
                raw = self.responses.get(key)
                parsed = request.parse(raw) if raw is not None else None
                if parsed is not None and (problem := schema_problem(request, parsed)):
                    parsed = None
            if parsed is None:
                if problem:
                    self.rejected.add(key)
                    request = request.again(problem)
                missing[key] = request
            else:
                answers[key] = parsed
                self.used[key] = raw
        if missing:
            capabilities = self.client_capabilities
            lacking: set[str] = set()
            for request in missing.values():
                if request.capability not in capabilities:
                    lacking.add(request.capability)
            if lacking:
                raise missing_capability(lacking)
            raise InputRequired(missing)
        return answers


@dataclass(frozen=True, slots=True)
class Replica:
    """What a handler may know about the replica running it."""

    replica_id: str
    tool_version: int
    in_flight: Callable[[], int]
    shed_in_flight_threshold: int
    shed_every_units: int
    #: Where CPU-heavy work runs off the event loop (None: on the loop, as in bare tests).
    cpu: CpuPool | None = None


Notify = Callable[[dict[str, Any]], Awaitable[None]]

#: Syslog severities, as MCP logging uses them, least to most severe.
LOG_LEVELS = {
    name: rank
    for rank, name in enumerate(
        ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
    )
}


@dataclass(slots=True, kw_only=True)
class Caller:
    """Who a handler runs for: the principal, what their client can do, what it asked for.

    A `Call` is a caller with a request; a task run is a caller without one.
    """

    principal: str
    client_capabilities: dict[str, Any]
    progress_token: str | int | None = None
    log_level: str | None = None
    notify: Notify | None = None
    #: Whether the client has gone away (its connection closed); None when unknown.
    disconnected: Callable[[], Awaitable[bool]] | None = None


class Context:
    """One run of a handler: its arguments, its caller, its replica and its input channel."""

    def __init__(
        self,
        caller: Caller,
        arguments: dict[str, Any],
        replica: Replica,
        channel: Channel,
        state: dict[str, Any] | None = None,
        *,
        may_become_task: bool = False,
    ) -> None:
        self.arguments = arguments
        self.principal = caller.principal
        self.client_capabilities = caller.client_capabilities
        self.replica = replica
        self.channel = channel
        #: The handler's own progress, carried to the next round (MRTR) or kept in memory.
        self.state: dict[str, Any] = state if state is not None else {}
        self.progress_token = caller.progress_token
        self.log_level = caller.log_level
        self._notify = caller.notify
        self._disconnected = caller.disconnected
        #: Whether `become_task` creates a task (an ephemeral attempt the client let the
        #: server run as a task); False inside a task and where there are no tasks.
        self.may_become_task = may_become_task

    def supports(self, capability: str) -> bool:
        """Whether the client declared `capability` (elicitation, sampling, roots)."""
        return capability in self.client_capabilities

    async def ask(self, **requests: InputRequest) -> dict[str, Any]:
        """Ask several things in one round; returns parsed answers by key."""
        return await self.channel.ask(requests)

    async def elicit(self, key: str, message: str, schema: dict[str, Any]) -> Elicited:
        """Ask the user to fill a form; returns their accept/decline/cancel."""
        return (await self.channel.ask({key: elicitation(message, schema)}))[key]

    async def sample(
        self, key: str, prompt: str, *, max_tokens: int = 100, system_prompt: str | None = None
    ) -> Sampled:
        """Ask the client's LLM a question."""
        request = sampling(prompt, max_tokens=max_tokens, system_prompt=system_prompt)
        return (await self.channel.ask({key: request}))[key]

    async def list_roots(self, key: str) -> list[dict[str, Any]]:
        """Ask the client for its roots."""
        return (await self.channel.ask({key: roots()}))[key]

    async def abandoned(self) -> bool:
        """Whether nobody waits for this call any more (the client disconnected).

        Long work checks it between slices and stops: a result nobody will read is only
        load on the replica.
        """
        return self._disconnected is not None and await self._disconnected()

    def overloaded(self) -> bool:
        """Whether this replica is over its in-flight threshold and should shed work."""
        threshold = self.replica.shed_in_flight_threshold
        return threshold > 0 and self.replica.in_flight() > threshold

    def offload(self) -> None:
        """End this attempt and hand `ctx.state` to whichever replica gets the retry.

        Only MRTR can move a call; elsewhere this does nothing and the handler carries on.
        """
        if self.channel.can_offload:
            raise Offload()

    async def become_task(self, message: str = "") -> None:
        """From here on, run as a task (the seed's "ephemeral then persistent").

        Everything before this call is ephemeral: questions go the MRTR way and the server
        keeps nothing. Here, if the client let this call run as a task, the request ends
        with a task and the handler carries on in the background, its state in the task
        store; later questions park the task in `input_required`. Inside a task, or when
        the client did not opt in, this does nothing and the handler simply carries on.
        There is no way back: a task never returns to the ephemeral workflow.
        """
        if self.may_become_task:
            raise BecomeTask(message, self.state)

    async def log(self, level: str, data: Any, logger: str = "tool") -> None:
        """Send a log message, when the client asked for this level or a more severe one."""
        if self.log_level is None or self._notify is None:
            return
        if LOG_LEVELS.get(level, 0) < LOG_LEVELS.get(self.log_level, 0):
            return
        params = {"level": level, "logger": logger, "data": data}
        await self._notify({"jsonrpc": "2.0", "method": "notifications/message", "params": params})

    async def progress(
        self, progress: float, total: float | None = None, message: str = ""
    ) -> None:
        """Report progress, when the client asked for it with a progress token."""
        if self.progress_token is None or self._notify is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message:
            params["message"] = message
        await self._notify({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

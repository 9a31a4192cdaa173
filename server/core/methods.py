"""The MCP methods of protocol 2026-07-28: discovery, listing, and the three MRTR methods.

Each method takes a `Call` (the request, its caller, its era's extras) and returns the
JSON-RPC result. Only `tools/call`, `prompts/get` and `resources/read` may return
`input_required`; they run their handler through `MrtrRunner`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from server.core.catalog import Catalog, Handler
from server.core.context import Context, MrtrChannel, Notify, Replica
from server.mrtr.runner import MrtrRunner
from server.mrtr.state import Origin, arguments_digest
from server.protocol.headers import check_param_headers
from server.protocol.jsonrpc import Message, RpcError, invalid_params

if TYPE_CHECKING:
    from server.tasks.methods import TaskMethods

MODERN_VERSION = "2026-07-28"
SERVER_INFO = {"name": "mrtr-lab", "title": "MRTR Lab server", "version": "0.1.0"}
INSTRUCTIONS = (
    "MRTR Lab: demo tools that ask for input in the middle of a call. Under protocol "
    "2026-07-28 they answer input_required with inputRequests and a sealed requestState; "
    "retry with inputResponses and the same requestState, on any replica."
)


@dataclass(slots=True)
class Call:
    """One client request being served: the message and who sent it with what abilities."""

    message: Message
    principal: str
    client_capabilities: dict[str, Any]
    headers: Mapping[str, str] | None = None
    progress_token: str | int | None = None
    log_level: str | None = None
    notify: Notify | None = None


Method = Callable[[Call], Awaitable[dict[str, Any]]]


class Methods:
    """The 2026-07-28 method table of one replica."""

    def __init__(
        self,
        catalog: Catalog,
        runner: MrtrRunner,
        replica: Replica,
        *,
        supported_versions: list[str],
        list_ttl_ms: int,
        tasks: TaskMethods | None = None,
    ) -> None:
        self.catalog = catalog
        self.runner = runner
        self.replica = replica
        self.supported_versions = supported_versions
        self.list_ttl_ms = list_ttl_ms
        self.table: dict[str, Method] = {
            "server/discover": self.discover,
            "tools/list": self.tools_list,
            "tools/call": self.tools_call,
            "prompts/list": self.prompts_list,
            "prompts/get": self.prompts_get,
            "resources/list": self.resources_list,
            "resources/templates/list": self.resource_templates_list,
            "resources/read": self.resources_read,
            "completion/complete": self.complete,
        }
        #: Persistent tools (tasks), when this replica serves them.
        self.tasks = tasks
        if tasks is not None:
            self.table.update(tasks.table)

    def capabilities(self) -> dict[str, Any]:
        """What this server offers, for discovery."""
        capabilities: dict[str, Any] = {
            "tools": {"listChanged": False},
            "prompts": {"listChanged": False},
            "resources": {"listChanged": False, "subscribe": False},
            "completions": {},
        }
        if self.tasks is not None:
            capabilities["extensions"] = self.tasks.extensions()
        return capabilities

    def _cacheable(self, result: dict[str, Any]) -> dict[str, Any]:
        result["resultType"] = "complete"
        result["ttlMs"] = self.list_ttl_ms
        result["cacheScope"] = "public"
        return result

    async def discover(self, call: Call) -> dict[str, Any]:
        return self._cacheable(
            {
                "supportedVersions": self.supported_versions,
                "capabilities": self.capabilities(),
                "instructions": INSTRUCTIONS,
                "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
            }
        )

    async def tools_list(self, call: Call) -> dict[str, Any]:
        return self._cacheable({"tools": [t.describe() for t in self.catalog.tools.values()]})

    async def prompts_list(self, call: Call) -> dict[str, Any]:
        return self._cacheable({"prompts": [p.describe() for p in self.catalog.prompts.values()]})

    async def resources_list(self, call: Call) -> dict[str, Any]:
        resources = [r.describe() for r in self.catalog.resources.values()]
        return self._cacheable({"resources": resources})

    async def resource_templates_list(self, call: Call) -> dict[str, Any]:
        templates = [r.describe() for r in self.catalog.templates]
        return self._cacheable({"resourceTemplates": templates})

    async def complete(self, call: Call) -> dict[str, Any]:
        params = call.message.params
        argument = params.get("argument")
        ref = params.get("ref")
        if not isinstance(argument, dict) or not isinstance(ref, dict):
            raise invalid_params("completion/complete needs ref and argument objects")
        return {"resultType": "complete", "completion": {"values": [], "hasMore": False}}

    async def tools_call(self, call: Call) -> dict[str, Any]:
        params = call.message.params
        name = params.get("name")
        tool = self.catalog.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise invalid_params(f"Unknown tool: {name!r}")
        arguments = _arguments(params)
        errors = tool.argument_errors(arguments)
        if errors:
            raise invalid_params(f"Invalid arguments for {name}: {'; '.join(errors)}")
        if tool.header_params:
            check_param_headers(call.headers or {}, tool.header_params, arguments)
        if self.tasks is not None:
            return await self.tasks.call_tool(call, tool, arguments, self._attempt)
        return await self._attempt(call, tool.handler, name, arguments)

    async def prompts_get(self, call: Call) -> dict[str, Any]:
        params = call.message.params
        name = params.get("name")
        prompt = self.catalog.prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise invalid_params(f"Unknown prompt: {name!r}")
        arguments = _arguments(params)
        missing = prompt.missing_arguments(arguments)
        if missing:
            raise invalid_params(f"Missing prompt arguments: {', '.join(missing)}")
        return await self._attempt(call, prompt.handler, name, arguments)

    async def resources_read(self, call: Call) -> dict[str, Any]:
        uri = call.message.params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params("resources/read needs a uri string")
        found = self.catalog.find_resource(uri)
        if found is None:
            raise invalid_params("Resource not found", {"uri": uri})
        resource, variables = found
        result = await self._attempt(call, resource.handler, uri, {**variables, "uri": uri})
        if result["resultType"] == "complete":
            result["ttlMs"] = 0
            result["cacheScope"] = "private"
        return result

    async def _attempt(
        self,
        call: Call,
        handler: Handler,
        name: str,
        arguments: dict[str, Any],
        *,
        may_become_task: bool = False,
    ) -> dict[str, Any]:
        method = call.message.method
        origin = Origin(call.principal, method, name, arguments_digest(arguments))

        def make_context(channel: MrtrChannel, state: dict[str, Any]) -> Context:
            return Context(
                arguments=arguments,
                principal=call.principal,
                client_capabilities=call.client_capabilities,
                replica=self.replica,
                channel=channel,
                state=state,
                progress_token=call.progress_token,
                log_level=call.log_level,
                notify=call.notify,
                may_become_task=may_become_task,
            )

        return await self.runner.attempt(
            handler, call.message.params, origin, make_context, call.client_capabilities
        )


def _arguments(params: dict[str, Any]) -> dict[str, Any]:
    arguments = params.get("arguments")
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise invalid_params("arguments must be an object")
    return arguments


__all__ = ["MODERN_VERSION", "Call", "Methods", "RpcError"]

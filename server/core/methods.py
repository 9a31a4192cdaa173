"""The catalog methods every era serves: discovery, listing, and the three that run handlers.

Each method takes a `Call` and returns the JSON-RPC result. `tools/call`, `prompts/get`
and `resources/read` resolve the request to an `Invocation` (handler, name, checked
arguments) and run it through the `Attempt` this table was built with: the replica
decides there whether a handler that asks for input ends `input_required` (MRTR), becomes
a task, or holds an SSE stream (legacy). The table knows none of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from server.core.call import Attempt, Call, Invocation, Method
from server.core.catalog import Catalog
from server.protocol.headers import META_SERVER_INFO, check_param_headers
from server.protocol.jsonrpc import RpcError, invalid_params
from server.protocol.versions import MODERN_VERSION

SERVER_INFO = {"name": "mrtr-lab", "title": "MRTR Lab server", "version": "0.1.0"}
INSTRUCTIONS = (
    "MRTR Lab: demo tools that ask for input in the middle of a call. Under protocol "
    f"{MODERN_VERSION} they answer input_required with inputRequests and a sealed "
    "requestState; retry with inputResponses and the same requestState, on any replica."
)


class Methods:
    """The catalog methods of one era, running handlers through one `Attempt` strategy."""

    def __init__(
        self,
        catalog: Catalog,
        attempt: Attempt,
        *,
        supported_versions: list[str],
        list_ttl_ms: int,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        self.catalog = catalog
        self.attempt = attempt
        #: Extensions the server declares (e.g. tasks), beside what the table serves.
        self.extensions = dict(extensions or {})
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

    def capabilities(self) -> dict[str, Any]:
        """What this server offers, for discovery."""
        capabilities: dict[str, Any] = {
            "tools": {"listChanged": False},
            "prompts": {"listChanged": False},
            "resources": {"listChanged": False, "subscribe": False},
            "completions": {},
        }
        if self.extensions:
            capabilities["extensions"] = dict(self.extensions)
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
                "_meta": {META_SERVER_INFO: SERVER_INFO},
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

    def tools_call(self, call: Call) -> Awaitable[dict[str, Any]]:
        # Not a coroutine: it checks the request, then hands back the attempt's awaitable
        # (one coroutine fewer on the busiest method; `prompts_get` likewise).
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
        return self.attempt(call, Invocation(tool.handler, tool.name, arguments, tool))

    def prompts_get(self, call: Call) -> Awaitable[dict[str, Any]]:
        params = call.message.params
        name = params.get("name")
        prompt = self.catalog.prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise invalid_params(f"Unknown prompt: {name!r}")
        arguments = _arguments(params)
        missing = prompt.missing_arguments(arguments)
        if missing:
            raise invalid_params(f"Missing prompt arguments: {', '.join(missing)}")
        return self.attempt(call, Invocation(prompt.handler, prompt.name, arguments))

    async def resources_read(self, call: Call) -> dict[str, Any]:
        uri = call.message.params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params("resources/read needs a uri string")
        found = self.catalog.find_resource(uri)
        if found is None:
            raise invalid_params("Resource not found", {"uri": uri})
        resource, variables = found
        invocation = Invocation(resource.handler, uri, {**variables, "uri": uri})
        result = await self.attempt(call, invocation)
        if result["resultType"] == "complete":
            result["ttlMs"] = 0
            result["cacheScope"] = "private"
        return result


def _arguments(params: dict[str, Any]) -> dict[str, Any]:
    arguments = params.get("arguments")
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise invalid_params("arguments must be an object")
    return arguments


__all__ = ["Methods", "RpcError"]

"""The 2026-07-28 request rules a gateway can see: headers and `_meta` names, and checks.

For protocol 2026-07-28 every request is self-contained: the protocol version, client
info and client capabilities ride in `params._meta`, and the headers `MCP-Protocol-Version`,
`Mcp-Method` and `Mcp-Name` repeat what the body says so that load balancers and gateways
can route without parsing JSON. A header that disagrees with the body is a 400 with
HeaderMismatch (-32020); an unknown version is a 400 with UnsupportedProtocolVersion
(-32022) listing the versions this server speaks.

Standard library only: both the server and the reference clients use these names.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any

from server.protocol import jsonrpc
from server.protocol.jsonrpc import (
    HEADER_MISMATCH,
    UNSUPPORTED_PROTOCOL_VERSION,
    Message,
    RpcError,
)

#: Headers of Streamable HTTP, spelled as sent; servers read them case-insensitively.
VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
#: A 2025-11-25 session's id, issued by `initialize` and sent on every later request.
SESSION_HEADER = "Mcp-Session-Id"
#: An argument a tool mirrors in a header (SEP-2243's `x-mcp-header`): this, then its name.
PARAM_HEADER_PREFIX = "Mcp-Param-"

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
#: The tasks extension (SEP-2663), as a capability under `extensions`.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: The seed's `_meta` entry tying a task message to its task.
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: Methods whose target (tool, prompt, resource or task) is repeated in the `Mcp-Name`
#: header; the tasks extension (SEP-2663) adds its task methods, named by `taskId`.
NAMED_METHODS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


#: The same names as ASGI (and `request_headers`) spell them, for lookups on the hot path.
VERSION_KEY = VERSION_HEADER.lower()
METHOD_KEY = METHOD_HEADER.lower()
NAME_KEY = NAME_HEADER.lower()


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value with surrounding whitespace removed (RFC 9110).

    `headers` has lowercase names (as ASGI gives them, or Starlette's case-insensitive
    `Headers`); `name` may be spelled either way.
    """
    value = headers.get(name.lower())
    return value.strip() if value is not None else None


def check_modern_request(
    headers: Mapping[str, str], message: Message, supported_versions: list[str]
) -> dict[str, Any]:
    """Apply the 2026-07-28 request rules; returns the client's declared capabilities.

    `headers` has lowercase names, as `request_headers` builds them.
    """
    version = headers.get(VERSION_KEY)
    if version is None:
        raise RpcError(HEADER_MISMATCH, "Missing MCP-Protocol-Version header", http_status=400)
    meta = message.params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            "Invalid params: _meta with protocolVersion and clientCapabilities is required",
            http_status=400,
        )
    if META_VERSION not in meta or META_CAPABILITIES not in meta:
        missing = [k for k in (META_VERSION, META_CAPABILITIES) if k not in meta]
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            f"Invalid params: _meta is missing {', '.join(missing)}",
            http_status=400,
        )
    version = version.strip()
    if version != meta[META_VERSION]:
        raise RpcError(
            HEADER_MISMATCH,
            "MCP-Protocol-Version header does not match _meta protocolVersion",
            http_status=400,
        )
    if version not in supported_versions:
        raise unsupported_version(version, supported_versions)
    capabilities = meta[META_CAPABILITIES]
    if not isinstance(capabilities, dict):
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            "Invalid params: clientCapabilities must be an object",
            http_status=400,
        )
    check_route_headers(headers, message, required=True)
    return capabilities


def check_route_headers(headers: Mapping[str, str], message: Message, *, required: bool) -> None:
    """Check that `Mcp-Method` and `Mcp-Name` say what the body says (HeaderMismatch, 400).

    A gateway routes on them without reading the body, so a request whose headers say one
    thing and body another must not pass. The 2026-07-28 era requires them (`required`);
    the 2025-11-25 era checks them only where a client sends them.
    """
    method = headers.get(METHOD_KEY)
    if (method is None and required) or (method is not None and method.strip() != message.method):
        raise RpcError(
            HEADER_MISMATCH, "Mcp-Method header does not match the body's method", http_status=400
        )
    field = NAMED_METHODS.get(message.method)
    if field is not None:
        target = message.params.get(field)
        if isinstance(target, str):
            name = headers.get(NAME_KEY)
            if (name is None and required) or (name is not None and name.strip() != target):
                raise RpcError(
                    HEADER_MISMATCH,
                    f"Mcp-Name header does not match the body's params.{field}",
                    http_status=400,
                )


_BASE64_WRAPPED = re.compile(r"=\?base64\?(.*)\?=\Z", re.DOTALL)


def header_value_text(value: str) -> str:
    """The text an `Mcp-Param-*` header carries: `=?base64?...?=` decoded, else literal."""
    wrapped = _BASE64_WRAPPED.match(value)
    if wrapped is None:
        return value
    try:
        return base64.b64decode(wrapped.group(1), validate=True).decode()
    except (binascii.Error, ValueError) as exc:
        raise RpcError(
            HEADER_MISMATCH, "Mcp-Param header is not valid Base64", http_status=400
        ) from exc


def check_param_headers(
    headers: Mapping[str, str], header_params: dict[str, str], arguments: dict[str, Any]
) -> None:
    """Check every argument a tool mirrors in an `Mcp-Param-<name>` header matches it."""
    for arg, suffix in header_params.items():
        if arg not in arguments or arguments[arg] is None:
            continue
        raw = headers.get(f"{PARAM_HEADER_PREFIX}{suffix}".lower())
        if raw is None:
            raise RpcError(
                HEADER_MISMATCH, f"Mcp-Param-{suffix} header is required", http_status=400
            )
        body_value = arguments[arg]
        expected = json.dumps(body_value) if isinstance(body_value, bool) else str(body_value)
        if header_value_text(raw.strip()) != expected:
            raise RpcError(
                HEADER_MISMATCH,
                f"Mcp-Param-{suffix} header does not match arguments.{arg}",
                http_status=400,
            )


def unsupported_version(requested: Any, supported_versions: list[str]) -> RpcError:
    """The error for a protocol version this server does not speak."""
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": supported_versions, "requested": str(requested)},
        http_status=400,
    )

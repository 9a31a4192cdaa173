"""Streamable HTTP: the rules a POST to /mcp must follow before any method runs.

For protocol 2026-07-28 every request is self-contained: the protocol version, client
info and client capabilities ride in `params._meta`, and the headers `MCP-Protocol-Version`,
`Mcp-Method` and `Mcp-Name` repeat what the body says so that load balancers and gateways
can route without parsing JSON. A header that disagrees with the body is a 400 with
HeaderMismatch (-32020); an unknown version is a 400 with UnsupportedProtocolVersion
(-32022) listing the versions this server speaks.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from server import jsonrpc
from server.jsonrpc import HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION, Message, RpcError

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
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
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1"}
JSON_CONTENT_TYPE = "application/json"


class BodyTooLarge(Exception):
    """A request body over the configured limit (HTTP 413)."""


def request_headers(request: Request) -> dict[str, str]:
    """The request's headers as a plain dict (lowercase names), built once per request.

    Starlette's `Headers` scans its list on every lookup; the request path looks up a
    handful of headers, so one pass into a dict is cheaper.
    """
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in request.scope["headers"]}


async def read_body(request: Request, headers: Mapping[str, str], limit_bytes: int) -> bytes:
    """The request body, refusing to buffer more than `limit_bytes`."""
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit():
        if int(declared) > limit_bytes:
            raise BodyTooLarge()
        return await request.body()  # the server stops reading at Content-Length
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit_bytes:
            raise BodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


_local_host_values: dict[str, bool] = {}


def is_local_request(headers: Mapping[str, str]) -> bool:
    """Whether Host and Origin name this machine (DNS-rebinding protection on loopback)."""
    host = headers.get("host", "")
    local = _local_host_values.get(host)
    if local is None:
        if len(_local_host_values) > 1024:
            _local_host_values.clear()
        local = _local_host_values[host] = _hostname(f"//{host}") in LOCAL_HOSTS
    if not local:
        return False
    origin = headers.get("origin")
    return origin is None or origin == "null" or _hostname(origin) in LOCAL_HOSTS


def _hostname(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header value (lowercase `name`) with surrounding whitespace removed (RFC 9110)."""
    value = headers.get(name)
    return value.strip() if value is not None else None


def check_modern_request(
    headers: Mapping[str, str], message: Message, supported_versions: list[str]
) -> dict[str, Any]:
    """Apply the 2026-07-28 request rules; returns the client's declared capabilities."""
    meta = message.params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            "Invalid params: _meta with protocolVersion and clientCapabilities is required",
            http_status=400,
        )
    missing = [k for k in (META_VERSION, META_CAPABILITIES) if k not in meta]
    if missing:
        raise RpcError(
            jsonrpc.INVALID_PARAMS,
            f"Invalid params: _meta is missing {', '.join(missing)}",
            http_status=400,
        )
    version = header(headers, "mcp-protocol-version")
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
    if header(headers, "mcp-method") != message.method:
        raise RpcError(
            HEADER_MISMATCH, "Mcp-Method header does not match the body's method", http_status=400
        )
    field = NAMED_METHODS.get(message.method)
    if field is not None:
        target = message.params.get(field)
        if isinstance(target, str) and header(headers, "mcp-name") != target:
            raise RpcError(
                HEADER_MISMATCH,
                f"Mcp-Name header does not match the body's params.{field}",
                http_status=400,
            )
    return capabilities


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
        raw = headers.get(f"mcp-param-{suffix.lower()}")
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


def json_response(body: dict[str, Any], status: int = 200) -> Response:
    """One JSON-RPC message as an application/json response."""
    return Response(jsonrpc.encode(body), status_code=status, media_type=JSON_CONTENT_TYPE)


def error_response(rid: jsonrpc.RequestId, error: RpcError) -> Response:
    """A JSON-RPC error with the HTTP status the transport rules give it."""
    return json_response(jsonrpc.error_response(rid, error), error.http_status)


def sse_event(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as a Server-Sent Event."""
    return b"event: message\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"


def sse_response(events: AsyncIterator[bytes], headers: dict[str, str] | None = None) -> Response:
    """A text/event-stream response that proxies must not buffer."""
    return StreamingResponse(
        events,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})},
    )

"""JSON-RPC 2.0 as MCP uses it: parsing one request, error codes, encoding responses.

MCP sends one message per HTTP POST (batches were removed in 2025-06-18), so a JSON array
is an invalid request here, not a batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Streamable HTTP, protocol 2026-07-28.
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
#: The lab's code (implementation-defined range) for a caller over a per-principal limit.
TOO_MANY_REQUESTS = -32029

RequestId = str | int | None


class RpcError(Exception):
    """A JSON-RPC error to send back, with the HTTP status the transport should use."""

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        http_status: int = 200,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status

    def to_error(self) -> dict[str, Any]:
        """The `error` member of a JSON-RPC error response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def invalid_params(message: str, data: Any = None) -> RpcError:
    """The error for params that are present but wrong (-32602)."""
    return RpcError(INVALID_PARAMS, message, data)


def too_large(what: str, size_bytes: int, limit_bytes: int) -> RpcError:
    """The error for something the server would keep that is over its size limit."""
    return RpcError(
        INVALID_PARAMS,
        f"{what} is {size_bytes} bytes as JSON; this server keeps at most {limit_bytes}",
        {"limit": limit_bytes},
        http_status=413,
    )


def json_size(value: Any) -> int:
    """How many bytes `value` takes as compact JSON (what a store keeps of it)."""
    try:
        return len(orjson.dumps(value))
    except TypeError:  # integers beyond 64 bits
        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def too_many_requests(message: str, limit: int) -> RpcError:
    """The error for a caller over one of its per-principal limits (HTTP 429)."""
    return RpcError(TOO_MANY_REQUESTS, message, {"limit": limit}, http_status=429)


@dataclass(slots=True)
class Message:
    """One incoming JSON-RPC message: a request (has an id) or a notification (no id)."""

    method: str
    params: dict[str, Any]
    id: RequestId = None
    is_notification: bool = False


@dataclass(slots=True)
class Response:
    """One incoming JSON-RPC response: a client's answer to a server-initiated request."""

    id: RequestId
    result: Any = None
    error: Any = None


#: Tuples rather than `str | int`: a union in `isinstance` is built again at every call.
_ID_TYPES = (str, int)
_CONTAINERS = (dict, list)

#: Deepest nesting of arrays and objects a message may have. Real messages stay under
#: ten levels; a thousand would exhaust the recursion of whatever walks them later.
MAX_DEPTH = 64


def decode(body: bytes) -> Any:
    """Parse a body as JSON, or raise a parse error (-32700); too deep is -32600."""
    try:
        payload = orjson.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RpcError(PARSE_ERROR, "Parse error: body is not valid JSON", http_status=400) from exc
    # Every level of nesting opens with a `{` or a `[`, so a body with no more of them
    # than the limit cannot nest beyond it: counting bytes (in C) spares the walk for
    # nearly every real message. Most requests hold no array at all, and finding that
    # out (memchr) costs next to nothing beside a second count over the whole body.
    # `find`, not `in`: `bytes.__contains__` first tries its operand as an integer and
    # builds (then drops) a TypeError's message on every call.
    brackets = body.count(b"{")
    if body.find(b"[") != -1:
        brackets += body.count(b"[")
    if brackets > MAX_DEPTH and nested_deeper_than(payload, MAX_DEPTH):
        raise RpcError(
            INVALID_REQUEST,
            f"Invalid request: nested more than {MAX_DEPTH} levels deep",
            http_status=400,
        )
    # A key given twice in one object keeps its last value here, while a gateway may read
    # the first: the two would act on different requests. Only a body that may repeat one
    # is parsed again, by a parser that sees every key.
    if type(payload) is dict and may_repeat_a_key(body, payload):
        repeated = repeated_key(body)
        if repeated is not None:
            raise RpcError(
                INVALID_REQUEST,
                f"Invalid request: the key {repeated[:100]!r} appears twice in one object",
                http_status=400,
            )
    return payload


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects in `value` nest more than `limit` levels (no recursion)."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        deeper = []
        for node in level:
            for child in node.values() if isinstance(node, dict) else node:
                if isinstance(child, _CONTAINERS):
                    deeper.append(child)
        level = deeper
    return False


def may_repeat_a_key(body: bytes, payload: dict[str, Any]) -> bool:
    """Whether some object of `body` may give a key twice (False: it surely does not).

    `payload` is the object parsed from `body`. Every key is followed by a colon, and so
    is nothing else outside strings. Written back out (in C), the object has one colon per
    member it kept, and the colons of the strings it kept, which JSON never escapes: a key
    given twice loses its member's colon. Nearly every client writes compact JSON, which
    comes back out byte for byte: the body itself, every member kept, nothing to count. An
    escape (`\\u003a`) could spell a colon the body does not show, so a body with a
    backslash is counted member by member instead (colons in its strings then count as
    members missing, and send it to the full check). One byte is sought, not `\\u`:
    memchr, not a substring search, which costs more than the rest.
    """
    if body.find(b"\\") == -1:
        try:
            written = orjson.dumps(payload)
        except orjson.JSONEncodeError:
            pass  # a number orjson reads but does not write: count the members
        else:
            return written != body and body.count(b":") > written.count(b":")
    return body.count(b":") > members(payload)


def members(value: dict[str, Any]) -> int:
    """How many members an object has in all, those of the objects inside it included.

    Recursive: `decode` calls it only on a message within `MAX_DEPTH`.
    """
    count = len(value)
    for child in value.values():
        kind = type(child)
        if kind is dict:
            count += members(child)
        elif kind is list:
            count += _members_in(child)
    return count


def _members_in(values: list[Any]) -> int:
    count = 0
    for child in values:
        kind = type(child)
        if kind is dict:
            count += members(child)
        elif kind is list:
            count += _members_in(child)
    return count


class _RepeatedKey(Exception):
    pass


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return found


def repeated_key(body: bytes) -> str | None:
    """The first key some object of the JSON `body` gives twice, or None."""
    try:
        json.loads(body, object_pairs_hook=_unique_members)
    except _RepeatedKey as exc:
        return str(exc.args[0])
    return None


def json_object(text: str | bytes | None) -> dict[str, Any] | None:
    """A body parsed as a JSON object, or None when it is empty, not JSON, or not an object.

    For readers of responses (clients, load-test users), where a proxy's HTML error page
    or an empty 202 is an answer to record rather than a failure to raise.
    """
    if not text:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def request_id_of(payload: Any) -> RequestId:
    """The id of a payload if it has a usable one, for echoing it in an error response."""
    if isinstance(payload, dict):
        rid = payload.get("id")
        if isinstance(rid, _ID_TYPES) and not isinstance(rid, bool):
            return rid
    return None


def parse_message(payload: Any) -> Message | Response:
    """Check the JSON-RPC envelope of a decoded body and return what it is."""
    if not isinstance(payload, dict):
        raise RpcError(
            INVALID_REQUEST,
            "Invalid Request: expected one JSON-RPC object (batches are not supported)",
            http_status=400,
        )
    if payload.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"', http_status=400)
    has_id = "id" in payload
    rid = payload.get("id")
    if has_id and (rid is None or isinstance(rid, bool) or not isinstance(rid, _ID_TYPES)):
        raise RpcError(
            INVALID_REQUEST, "Invalid Request: id must be a string or an integer", http_status=400
        )
    method = payload.get("method")
    if method is None and has_id and ("result" in payload or "error" in payload):
        return Response(rid, payload.get("result"), payload.get("error"))
    if not isinstance(method, str) or not method:
        raise RpcError(
            INVALID_REQUEST, "Invalid Request: method must be a non-empty string", http_status=400
        )
    params = payload.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object", http_status=400)
    return Message(method, params, rid, not has_id)


def result_response(rid: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def error_response(rid: RequestId, error: RpcError) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": rid, "error": error.to_error()}


def encode(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON for the wire."""
    try:
        return orjson.dumps(message)
    except TypeError:
        # orjson refuses integers beyond 64 bits, which a tool's result may hold. (A client's
        # never reach here: `decode` reads them as floats, as a JavaScript client would.)
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()

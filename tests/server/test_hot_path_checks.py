"""The request path's checks, taken the short way, decide as the long way does.

Each check on every request has a fast path for what nearly every request looks like (a
compact body, a peer seen before, a form asked with the same schema, arguments without
integers); these pin that what the fast path lets through is exactly what the full check
would, and that what it cannot vouch for goes to the full check.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from server.core.answer_schema import schema_problem
from server.core.catalog import Tool
from server.protocol.inputs import Elicited, elicitation
from server.protocol.jsonrpc import RpcError, decode, may_repeat_a_key, repeated_key
from server.transport.guard import from_this_machine

MESSAGE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "get_weather", "arguments": {"location": "Paris: 12:00"}},
}


@pytest.mark.parametrize(
    "body",
    [
        b'{"a":1,"a":2}',  # compact
        b'{"a": 1, "a": 2}',  # spaced
        b'{"b":{"a":1,"a":{"x":":"}}}',  # nested, a colon in a string
        b'{"a":1,"\\u0061":2}',  # the second key spelled with an escape
        b'{"a":1,"a":2,"b":"\\u003a"}',  # an escaped colon making up for the lost one
        b'{"a":123456789012345678901234567890,"a":1}',  # a number orjson does not write
    ],
)
def test_a_key_given_twice_is_refused_however_the_body_is_written(body: bytes) -> None:
    assert repeated_key(body) is not None  # the full check's verdict
    with pytest.raises(RpcError, match="appears twice"):
        decode(body)


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(MESSAGE, separators=(",", ":")).encode(),  # written as orjson writes it
        json.dumps(MESSAGE).encode(),  # spaced, colons in a string
        json.dumps(MESSAGE).replace("Paris", "Par\\u0069s").encode(),
        b'{"a":"\\u003a","b":":"}',
    ],
)
def test_a_body_without_a_repeated_key_is_served(body: bytes) -> None:
    assert repeated_key(body) is None
    assert decode(body) == json.loads(body)


def test_only_compact_bodies_skip_counting_and_both_agree() -> None:
    compact = json.dumps(MESSAGE, separators=(",", ":")).encode()
    spaced = json.dumps(MESSAGE).encode()
    assert not may_repeat_a_key(compact, json.loads(compact))
    assert not may_repeat_a_key(spaced, json.loads(spaced))
    assert may_repeat_a_key(b'{"a":1,"a":2}', {"a": 2})


def test_a_peer_is_judged_by_its_address_each_time_it_is_seen() -> None:
    for _ in range(2):  # the second time, from what the first found
        assert from_this_machine({"client": ("127.0.0.1", 1)}, {})
        assert from_this_machine({"client": ("::1", 1)}, {})
        assert not from_this_machine({"client": ("203.0.113.5", 1)}, {})
        assert not from_this_machine({"client": ("127.0.0.1", 1)}, {"x-forwarded-for": "a"})
        assert from_this_machine({}, {})  # a Unix socket


def test_a_form_changed_in_place_is_checked_against_what_it_now_says() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    answer = Elicited("accept", {"n": 5})
    assert schema_problem(elicitation("How many?", schema), answer) is None
    assert schema_problem(elicitation("How many?", schema), answer) is None  # found again
    schema["properties"]["n"]["maximum"] = 3
    problem = schema_problem(elicitation("How many?", schema), answer)
    assert problem is not None and "n: " in problem


async def _handler(ctx: Any) -> dict[str, Any]:
    return {}


def test_a_float_is_refused_only_where_the_schema_types_an_integer() -> None:
    counted = Tool(
        "count", "", {"type": "object", "properties": {"n": {"type": "integer"}}}, _handler
    )
    named = Tool("name", "", {"type": "object", "properties": {"n": {"type": "number"}}}, _handler)
    assert counted.argument_errors({"n": 2.0}) != []
    assert named.argument_errors({"n": 2.0}) == []
    assert counted.argument_errors({"n": 2}) == named.argument_errors({"n": 2}) == []

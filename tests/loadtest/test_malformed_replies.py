"""What the lab's clients make of malformed replies: an `error` that is not an object is the
server's fault, said as such; a form whose enum is empty is declined."""

from __future__ import annotations

import random

import pytest

from loadtest.users.simulated_user import answer_for
from server.client import McpError
from server.client.replies import result_of


@pytest.mark.parametrize("error", ["boom", 7, ["a"], True])
def test_an_error_that_is_not_an_object_is_an_mcp_error(error: object) -> None:
    with pytest.raises(McpError) as raised:
        result_of({"jsonrpc": "2.0", "id": 1, "error": error}, 200)
    assert raised.value.code == -32603
    assert "not a JSON-RPC error object" in raised.value.message


def test_a_form_whose_enum_is_empty_is_declined() -> None:
    form = {"properties": {"status": {"type": "string", "enum": []}}}
    request = {"method": "elicitation/create", "params": {"requestedSchema": form}}
    assert answer_for(request, random.Random(0)) == {"action": "decline"}

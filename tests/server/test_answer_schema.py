"""An elicitation answer is checked against the whole schema it was asked with.

An answer that does not fit (`-5` for `minimum: 0`, a string too long, one that misses
its pattern or format) is no answer: the server asks the same question again, its message
saying why, under MRTR, on a legacy stream and in a task alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from server.app import create_app
from server.client import LegacyClient, MrtrClient, accept
from server.client.handlers import Handlers
from server.core.catalog import Catalog
from server.core.context import Context
from server.protocol.content import tool_result
from tests.server.conftest import make_config, user_answers
from tests.server.tasks_fixtures import Wire, running_replicas, token
from tests.server.test_legacy_streams import live_replica

SIGN_UP = {
    "type": "object",
    "properties": {
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "handle": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["age", "handle"],
}
GOOD = {"age": 30, "handle": "ada", "email": "ada@example.com"}


def sign_up_catalog() -> Catalog:
    catalog = Catalog()

    @catalog.tool("sign_up", "Asks for a form with constraints.")
    async def sign_up(ctx: Context) -> dict[str, Any]:
        answer = await ctx.elicit("form", "Sign up", SIGN_UP)
        if not answer.accepted:
            return tool_result(f"Not signed up: {answer.action}")
        return tool_result(f"Welcome, {answer.content['handle']}")

    return catalog


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"age": -5}, "age: -5 is less than the minimum of 0"),
        ({"age": 151}, "age: 151 is greater than the maximum of 150"),
        ({"age": True}, 'age: true is not of type "integer"'),
        ({"handle": "abcdefghi"}, 'handle: "abcdefghi" is longer than 8 characters'),
        ({"handle": "Ada"}, 'handle: "Ada" does not match "^[a-z]+$"'),
        ({"email": "not-an-address"}, 'email: "not-an-address" is not a "email"'),
    ],
)
def test_an_answer_that_breaks_the_schema_is_asked_again_saying_why(
    change: dict[str, Any], reason: str
) -> None:
    app = create_app(make_config(), sign_up_catalog())
    with MrtrClient.for_app(app, handlers=user_answers()) as client:
        exchange = client.exchange("tools/call", {"name": "sign_up", "arguments": {}})
        assert not client.send(exchange)
        exchange.answer({"form": accept(**{**GOOD, **change})})
        assert not client.send(exchange)  # asked again
        again = exchange.input_requests["form"]["params"]
        assert again["message"] == f"Sign up\n\nYour last answer was not accepted: {reason}"
        assert again["requestedSchema"] == SIGN_UP
        exchange.answer({"form": accept(**GOOD)})
        assert client.send(exchange)
    assert exchange.result is not None
    assert exchange.result["content"][0]["text"] == "Welcome, ada"


def test_a_legacy_answer_that_breaks_the_schema_is_asked_again_on_the_stream() -> None:
    answers = iter(
        [accept(resolution="Duplicate"), accept(duplicateOfId=-5), accept(duplicateOfId=42)]
    )
    arguments = {"workItemId": 7, "fields": {"System.State": "Resolved"}}
    with live_replica() as base:
        handlers = Handlers(elicit=lambda params: next(answers))
        with LegacyClient(f"{base}/mcp", handlers=handlers) as client:
            done = client.call_tool("update_work_item", arguments)
    messages = [r["params"]["message"] for r in done.server_requests]
    assert messages[2] == messages[1] + (
        "\n\nYour last answer was not accepted: duplicateOfId: -5 is less than the minimum of 1"
    )
    assert done.text == "Bug #7 resolved as Duplicate of Bug #42"


@pytest.mark.integration
def test_a_task_answer_that_breaks_the_schema_parks_the_task_asking_again() -> None:
    with running_replicas(1) as (replica,):
        wire = Wire([replica.url], token=token("ida"))
        task_id = wire("tools/call", {"name": "echo", "task": {"ttl": 60_000}})["task"]["taskId"]
        related = {"io.modelcontextprotocol/related-task": {"taskId": task_id}}

        def answer(value: object) -> dict[str, Any]:
            wire.poll(task_id, {"input_required"})
            responses = {"echo_input": accept(input=value)}
            wire("tasks/input_response", {"inputResponses": responses, "_meta": related})
            return wire.poll(task_id, {"input_required", "completed"})

        assert answer(5)["status"] == "input_required"
        asked = wire("tasks/result", {"taskId": task_id})["inputRequests"]["echo_input"]
        assert asked["params"]["message"].endswith('not accepted: input: 5 is not of type "string"')
        assert answer("five")["status"] == "completed"
        done = wire("tasks/result", {"taskId": task_id})
        assert done["content"][0]["text"] == "Echo: five"


def test_a_declined_form_is_an_answer_with_nothing_to_check() -> None:
    app = create_app(make_config(), sign_up_catalog())
    with MrtrClient.for_app(app, handlers=user_answers()) as client:
        exchange = client.exchange("tools/call", {"name": "sign_up", "arguments": {}})
        assert not client.send(exchange)
        exchange.answer({"form": {"action": "decline"}})
        assert client.send(exchange)
    assert exchange.result is not None
    assert exchange.result["content"][0]["text"] == "Not signed up: decline"

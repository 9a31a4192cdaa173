"""What a target's users send and answer: every drawn form answer valid under the form's
own schema, a workload file read and checked against the target's schemas, and a failed
call said in the server's words."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadtest.target import Auth, Target, TargetError, TargetTool, answers_for
from loadtest.target.workload import ToolArguments, ToolWorkload, check_workload, read_workload
from loadtest.users.call_failure import rpc_error_failure, tool_error_failure
from server.client import McpError

#: Forms as the spec allows them in `requestedSchema`: primitives with their rules.
FORMS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "attendees": {"type": "integer", "minimum": 1, "maximum": 20},
            "room": {"type": "string", "enum": ["Atlas", "Borealis", "Cirrus"]},
            "email": {"type": "string", "format": "email"},
        },
        "required": ["attendees", "room", "email"],
    },
    {
        "type": "object",
        "properties": {
            "floor": {
                "type": "string",
                "oneOf": [{"const": "g", "title": "Ground"}, {"const": "1", "title": "First"}],
            },
            "code": {"type": "string", "pattern": "^[0-9]{6}$"},
            "nickname": {"type": "string", "minLength": 3, "maxLength": 8},
        },
        "required": ["floor", "code", "nickname"],
    },
    {
        "type": "object",
        "properties": {
            "site": {"type": "string", "format": "uri"},
            "on": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
            "notify": {"type": "boolean", "default": True},
        },
        "required": ["site", "on", "at", "ratio"],
    },
]


# A form's pool is itself drawn by a hypothesis run, nested in this one on first use.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.nested_given])
@given(form=st.sampled_from(FORMS), seed=st.integers(0, 2**32))
def test_every_answer_drawn_for_a_form_is_valid_under_its_schema(
    form: dict[str, Any], seed: int
) -> None:
    request = {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": form}}
    answer = answers_for("any", None)("q", request, random.Random(seed))
    assert answer["action"] == "accept"
    validator = jsonschema_rs.validator_for(form, validate_formats=True)
    assert validator.is_valid(answer["content"]), answer["content"]
    assert set(form["required"]) <= set(answer["content"])


def test_the_same_seed_draws_the_same_answers() -> None:
    request = {"method": "elicitation/create", "params": {"requestedSchema": FORMS[1]}}
    answer = answers_for("any", None)
    first = [answer("q", request, random.Random(5)) for _ in range(3)]
    assert first == [answer("q", request, random.Random(5)) for _ in range(3)]


TOOL = TargetTool(
    name="book_room",
    description="",
    input_schema={
        "type": "object",
        "properties": {"title": {"type": "string"}, "size": {"type": "integer", "maximum": 20}},
        "required": ["title"],
    },
)
TARGET = Target("http://peer/mcp", Auth(), ("2026-07-28",), {"book_room": TOOL})


def _workload(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "workload.toml"
    path.write_text(text)
    return path


def test_a_workload_file_gives_arguments_and_answers_by_question_and_by_field(
    tmp_path: Path,
) -> None:
    workload = read_workload(
        _workload(
            tmp_path,
            """
decline_share = 0.0
[tools.book_room.arguments]
title = "Standup"
size = [2, 4]
[tools.book_room.answers.booking]
room = "Cirrus"
[tools.book_room.answers]
email = { sample = ["a@example.org"] }
""",
        )
    )
    check_workload(workload, TARGET)
    arguments = ToolArguments(TOOL, workload.for_tool("book_room"), random.Random(1))
    calls = [arguments.next() for _ in range(3)]
    assert [c["title"] for c in calls] == ["Standup"] * 3
    assert [c["size"] for c in calls] == [2, 4, 2]
    request = {"method": "elicitation/create", "params": {"requestedSchema": FORMS[0]}}
    answer = answers_for("book_room", workload)("booking", request, random.Random(2))
    assert answer["content"]["room"] == "Cirrus"
    assert answer["content"]["email"] == "a@example.org"


def test_a_workload_value_its_field_refuses_is_named(tmp_path: Path) -> None:
    workload = read_workload(
        _workload(tmp_path, '[tools.book_room.arguments]\nsize = ["many", 3]\n')
    )
    with pytest.raises(TargetError, match=r"tools\.book_room\.arguments\.size: \"many\""):
        check_workload(workload, TARGET)


def test_a_workload_for_a_tool_the_target_does_not_list_names_those_it_does(
    tmp_path: Path,
) -> None:
    workload = read_workload(_workload(tmp_path, "[tools.nope.arguments]\nx = 1\n"))
    with pytest.raises(TargetError, match="lists no tool 'nope'; it lists: book_room"):
        check_workload(workload, TARGET)


def test_shares_of_decline_and_cancel_are_the_users_own(tmp_path: Path) -> None:
    workload = read_workload(_workload(tmp_path, "decline_share = 0.5\ncancel_share = 0.5\n"))
    answer = answers_for("book_room", workload)
    request = {"method": "elicitation/create", "params": {"requestedSchema": FORMS[0]}}
    actions = {answer("q", request, random.Random(n))["action"] for n in range(40)}
    assert actions == {"decline", "cancel"}


def test_a_failure_carries_the_servers_text_and_says_when_an_answer_was_rejected() -> None:
    result = {"isError": True, "content": [{"type": "text", "text": "attendees must be <= 20"}]}
    assert tool_error_failure(result, after_answers=False) == (
        "tool returned isError: attendees must be <= 20"
    )
    assert tool_error_failure(result, after_answers=True).startswith("answer rejected: ")
    error = McpError(-32602, "inputResponses.booking: 'x' is not an email")
    assert rpc_error_failure(error, after_answers=True) == (
        "answer rejected: -32602: inputResponses.booking: 'x' is not an email"
    )


def test_sampling_and_roots_are_answered_from_the_workload_file(tmp_path: Path) -> None:
    workload = read_workload(
        _workload(
            tmp_path,
            '[sampling]\ntext = "Lima"\nmodel = "m1"\n'
            '[[roots]]\nuri = "file:///srv/project"\nname = "project"\n',
        )
    )
    answer = answers_for("book_room", workload)
    sampled = answer("s", {"method": "sampling/createMessage", "params": {}}, random.Random(0))
    assert sampled["content"]["text"] == "Lima" and sampled["model"] == "m1"
    roots = answer("r", {"method": "roots/list", "params": {}}, random.Random(0))
    assert roots == {"roots": [{"uri": "file:///srv/project", "name": "project"}]}


def test_a_workload_answer_the_form_refuses_is_named(tmp_path: Path) -> None:
    workload = read_workload(
        _workload(tmp_path, "[tools.book_room.answers.booking]\nattendees = 50\n")
    )
    request = {"method": "elicitation/create", "params": {"requestedSchema": FORMS[0]}}
    with pytest.raises(TargetError, match=r"answers\.booking\.attendees: 50 does not fit"):
        answers_for("book_room", workload)("booking", request, random.Random(0))


def test_arguments_with_a_free_form_object_and_a_list_are_drawn_valid() -> None:
    tool = TargetTool(
        name="update_work_item",
        description="",
        input_schema={
            "type": "object",
            "properties": {
                "workItemId": {"type": "integer"},
                "fields": {"type": "object"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            },
            "required": ["workItemId", "fields"],
        },
    )
    arguments = ToolArguments(tool, ToolWorkload(), random.Random(3))
    validator = jsonschema_rs.validator_for(tool.input_schema)
    drawn = [arguments.next() for _ in range(10)]
    assert all(validator.is_valid(value) for value in drawn), drawn
    # Integers stay within what every JSON peer reads exactly.
    assert all(abs(value["workItemId"]) < 2**53 for value in drawn)

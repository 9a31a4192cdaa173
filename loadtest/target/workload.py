"""A workload file: what the users of a target send and answer, tool by tool (TOML).

    decline_share = 0.0              # every tool's, unless its table says otherwise
    cancel_share = 0.0

    [tools.book_room]
    decline_share = 0.1

    [tools.book_room.arguments]
    title = "Standup"                # a fixed value
    size = [2, 4, 8]                 # a list: cycled, call after call
    floor = { sample = ["g", "1"] }  # drawn at random
    notes = { generate = "schema" }  # drawn from the field's schema (what is left out is too)

    [tools.book_room.answers.booking]  # a question, by its key or its message
    room = "Atlas"
    [tools.book_room.answers]
    email = { sample = ["a@example.org", "b@example.org"] }  # a field, whatever asks it

    [sampling]
    text = "Paris"
    model = "workload-model"

    [[roots]]
    uri = "file:///srv/project"
    name = "project"

Read with `read_workload`, checked against the target's schemas with `check_workload`
before anything starts: a tool the target does not list, or a value its field's schema
refuses, is named.
"""

from __future__ import annotations

import itertools
import json
import random
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema_rs

from loadtest.target.endpoint import Target, TargetError, TargetTool
from loadtest.target.schema_data import pool_for


@dataclass
class FieldValues:
    """Where one field's values come from: one fixed value, a list cycled call after
    call, a list sampled at random, or the field's schema."""

    fixed: Any = None
    cycle: list[Any] | None = None
    sample: list[Any] | None = None
    generate: bool = False
    _turn: Iterator[Any] | None = None

    @classmethod
    def parse(cls, spec: Any, where: str) -> FieldValues:
        """A field's entry in the file, as written there."""
        if isinstance(spec, list):
            if not spec:
                raise TargetError(f"workload {where}: an empty list gives no value")
            return cls(cycle=spec)
        if isinstance(spec, dict) and set(spec) == {"sample"}:
            if not isinstance(spec["sample"], list) or not spec["sample"]:
                raise TargetError(f"workload {where}: sample takes a list of values")
            return cls(sample=spec["sample"])
        if isinstance(spec, dict) and set(spec) == {"generate"}:
            if spec["generate"] != "schema":
                raise TargetError(f'workload {where}: generate takes "schema"')
            return cls(generate=True)
        return cls(fixed=spec)

    def candidates(self) -> list[Any]:
        """Every value the file states for the field (none when drawn from its schema)."""
        if self.generate:
            return []
        return list(self.cycle or self.sample or [self.fixed])

    def next(self, rng: random.Random, schema: dict[str, Any] | None) -> Any:
        """The field's value for the next call or answer."""
        if self.cycle is not None:
            if self._turn is None:
                self._turn = itertools.cycle(self.cycle)
            return next(self._turn)
        if self.sample is not None:
            return rng.choice(self.sample)
        if self.generate:
            return pool_for(schema or {}).draw(rng)
        return self.fixed


@dataclass
class ToolWorkload:
    """One tool's table: its arguments, its answers, and the users' shares of decline
    and cancel."""

    arguments: dict[str, FieldValues] = field(default_factory=dict)
    #: Answers of one question, by its key (MRTR) or its message (legacy).
    questions: dict[str, dict[str, FieldValues]] = field(default_factory=dict)
    #: Answers to a field, whichever question asks it.
    fields: dict[str, FieldValues] = field(default_factory=dict)
    decline_share: float = 0.0
    cancel_share: float = 0.0


@dataclass
class Workload:
    """A whole workload file: each tool's table, and the answers to sampling and roots."""

    tools: dict[str, ToolWorkload] = field(default_factory=dict)
    sampling: dict[str, str] = field(default_factory=dict)
    roots: list[dict[str, str]] = field(default_factory=list)
    decline_share: float = 0.0
    cancel_share: float = 0.0

    def for_tool(self, name: str) -> ToolWorkload:
        """The tool's table, or an empty one with the file's shares."""
        return self.tools.get(
            name, ToolWorkload(decline_share=self.decline_share, cancel_share=self.cancel_share)
        )


def read_workload(path: str | Path) -> Workload:
    """The workload file at `path`, or a `TargetError` saying what is wrong with it."""
    try:
        document = tomllib.loads(Path(path).read_text())
    except OSError as error:
        raise TargetError(f"workload {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise TargetError(f"workload {path} is not TOML: {error}") from None
    workload = Workload(
        sampling={k: str(v) for k, v in (document.get("sampling") or {}).items()},
        roots=list(document.get("roots") or []),
        decline_share=_share(document, "decline_share", "the file"),
        cancel_share=_share(document, "cancel_share", "the file"),
    )
    for name, table in (document.get("tools") or {}).items():
        where = f"tools.{name}"
        answers = table.get("answers") or {}
        workload.tools[name] = ToolWorkload(
            arguments={
                k: FieldValues.parse(v, f"{where}.arguments.{k}")
                for k, v in (table.get("arguments") or {}).items()
            },
            questions={
                key: {
                    k: FieldValues.parse(v, f"{where}.answers.{key}.{k}") for k, v in spec.items()
                }
                for key, spec in answers.items()
                if _is_question(spec)
            },
            fields={
                k: FieldValues.parse(v, f"{where}.answers.{k}")
                for k, v in answers.items()
                if not _is_question(v)
            },
            decline_share=_share(table, "decline_share", where, workload.decline_share),
            cancel_share=_share(table, "cancel_share", where, workload.cancel_share),
        )
    return workload


def _is_question(spec: Any) -> bool:
    """Whether an entry under `answers` is a question's table (not one field's values)."""
    return isinstance(spec, dict) and not ({"sample", "generate"} & set(spec))


def _share(table: dict[str, Any], key: str, where: str, default: float = 0.0) -> float:
    value = table.get(key, default)
    if not isinstance(value, int | float) or not 0 <= value <= 1:
        raise TargetError(f"workload {where}: {key} must be a share between 0 and 1")
    return float(value)


def check_workload(workload: Workload, target: Target) -> None:
    """Refuse, before anything starts, a workload that does not fit the target: a tool it
    does not list, an argument its tool does not take, a value the field's schema refuses."""
    for name, table in workload.tools.items():
        tool = target.tool(name)
        properties = tool.input_schema.get("properties") or {}
        for field_name, values in table.arguments.items():
            where = f"tools.{name}.arguments.{field_name}"
            if properties and field_name not in properties:
                raise TargetError(
                    f"workload {where}: {name} takes no argument {field_name!r}; "
                    f"it takes {', '.join(sorted(properties))}"
                )
            check_values(values, properties.get(field_name) or {}, where)


def check_values(values: FieldValues, schema: dict[str, Any], where: str) -> None:
    """Refuse a value the file states that `schema` does not accept, naming where it is."""
    validator = jsonschema_rs.validator_for(schema, validate_formats=True)
    for value in values.candidates():
        errors = [error.message for error in validator.iter_errors(value)]
        if errors:
            raise TargetError(f"workload {where}: {json.dumps(value)} does not fit: {errors[0]}")


class ToolArguments:
    """The arguments of one tool's calls, one call after another: each drawn from the
    tool's `inputSchema`, with the fields the workload states taken from it."""

    def __init__(self, tool: TargetTool, table: ToolWorkload, rng: random.Random) -> None:
        self.tool = tool
        self.table = table
        self.rng = rng
        self.properties = tool.input_schema.get("properties") or {}

    def next(self) -> dict[str, Any]:
        """The next call's arguments."""
        drawn = dict(pool_for(self.tool.input_schema).draw(self.rng))
        for name, values in self.table.arguments.items():
            drawn[name] = values.next(self.rng, self.properties.get(name))
        return drawn

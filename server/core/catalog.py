"""The catalog: every tool, prompt and resource a server offers, with its handler.

A tool is a name, a description, a JSON Schema for its arguments and an async handler
``handler(ctx) -> CallToolResult``; prompts and resources are the same idea for
`prompts/get` and `resources/read`. Handlers read their arguments from `ctx.arguments`,
already checked against the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs

from server.core.context import Context

Handler = Callable[[Context], Awaitable[dict[str, Any]]]

EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass
class Tool:
    """A callable tool: `tools/list` shows `describe()`, `tools/call` runs `handler`."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    extra: dict[str, Any] = field(default_factory=dict)
    #: Whether a call changes the world (creates a machine, sends money): each round the
    #: client confirmed then runs once, however often it is sent (a sealed requestState
    #: is used once), and `tools/list` says the tool is neither read-only nor idempotent.
    side_effects: bool = False

    def __post_init__(self) -> None:
        # Built once. The dialect is JSON Schema 2020-12, MCP's default, unless the schema
        # names another in `$schema`; checking arguments costs a fraction of a microsecond.
        self._validator = jsonschema_rs.validator_for(self.input_schema)
        #: Arguments a client must repeat in an `Mcp-Param-<name>` header (SEP-2243's
        #: `x-mcp-header`), so gateways can route on them without parsing the body.
        self.header_params: dict[str, str] = {
            arg: spec["x-mcp-header"]
            for arg, spec in (self.input_schema.get("properties") or {}).items()
            if isinstance(spec, dict) and isinstance(spec.get("x-mcp-header"), str)
        }
        #: Whether this tool runs as a task: `forbidden` (default), `optional` or
        #: `required`, declared as `execution={"taskSupport": ...}` when registering and
        #: shown as such in `tools/list`. Read on every call, so read from `extra` once.
        self.task_support: str = (self.extra.get("execution") or {}).get("taskSupport", "forbidden")
        #: Whether any part of the schema is typed `integer`: if none is, no argument can
        #: be a float written for one, and the walk that looks for them is skipped.
        self._types_integers = '"integer"' in json.dumps(self.input_schema, default=str)

    def argument_errors(self, arguments: dict[str, Any]) -> list[str]:
        """Why `arguments` do not fit the input schema (empty when they do).

        An argument the schema types `integer` must be written as one: JSON Schema counts
        `100.0` as an integer, but a handler counting with it would get a float (and fail
        where it counts: `range`, `to_bytes`), so it is refused here as invalid params.
        """
        if self._validator.is_valid(arguments):
            if not self._types_integers:
                return []
            return _written_as_floats(self.input_schema, arguments, ())
        return [
            f"arguments{_json_path(error.instance_path)}: {error.message}"
            for error in self._validator.iter_errors(arguments)
        ]

    def describe(self) -> dict[str, Any]:
        described = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            **self.extra,
        }
        if self.side_effects:
            hints = {"readOnlyHint": False, "idempotentHint": False}
            described["annotations"] = {**hints, **(self.extra.get("annotations") or {})}
        return described


def _written_as_floats(schema: Any, value: Any, path: tuple[str | int, ...]) -> list[str]:
    """Errors for the values under `schema`'s `integer` properties (and items) that are
    floats, such as `100.0`; `value` already fits `schema` otherwise."""
    if not isinstance(schema, dict):
        return []
    if isinstance(value, float) and schema.get("type") == "integer":
        return [
            f"arguments{_json_path(path)}: {value!r} is not an integer (write it as {value:.0f})"
        ]
    errors: list[str] = []
    if isinstance(value, dict):
        for name, spec in (schema.get("properties") or {}).items():
            if name in value:
                errors += _written_as_floats(spec, value[name], (*path, name))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            errors += _written_as_floats(schema["items"], item, (*path, index))
    return errors


def _json_path(path: Sequence[str | int]) -> str:
    """Where in the arguments an error is, as `.fields.tags[2]` (empty for the whole)."""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path)


@dataclass
class Prompt:
    """A prompt template: `prompts/get` runs `handler` with the prompt's arguments."""

    name: str
    description: str
    arguments: list[dict[str, Any]]
    handler: Handler

    def missing_arguments(self, arguments: dict[str, Any]) -> list[str]:
        return [
            a["name"] for a in self.arguments if a.get("required") and a["name"] not in arguments
        ]

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.arguments:
            out["arguments"] = self.arguments
        return out


@dataclass
class Resource:
    """A readable resource at a fixed URI (or, with `uri_template`, a family of URIs)."""

    uri: str
    name: str
    description: str
    mime_type: str
    handler: Handler
    uri_template: str | None = None

    def __post_init__(self) -> None:
        self._pattern = None
        if self.uri_template:
            parts = re.split(r"(\{[^}]+\})", self.uri_template)
            regex = "".join(
                f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts
            )
            self._pattern = re.compile(regex + r"\Z")

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables of `uri` if this template matches it."""
        if self._pattern is None:
            return None
        m = self._pattern.match(uri)
        return m.groupdict() if m else None

    def describe(self) -> dict[str, Any]:
        key = ("uriTemplate", self.uri_template) if self.uri_template else ("uri", self.uri)
        return {
            key[0]: key[1],
            "name": self.name,
            "description": self.description,
            "mimeType": self.mime_type,
        }


class Catalog:
    """Everything one server offers, in a deterministic order."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.prompts: dict[str, Prompt] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: list[Resource] = []

    def tool(
        self,
        name: str,
        description: str,
        input_schema: dict[str, Any] | None = None,
        *,
        side_effects: bool = False,
        **extra: Any,
    ) -> Callable[[Handler], Handler]:
        """Register the decorated handler as a tool (`side_effects`: see `Tool`)."""

        def register(handler: Handler) -> Handler:
            schema = input_schema if input_schema is not None else EMPTY_OBJECT_SCHEMA
            self.tools[name] = Tool(name, description, schema, handler, extra, side_effects)
            return handler

        return register

    def prompt(
        self, name: str, description: str, arguments: list[dict[str, Any]] | None = None
    ) -> Callable[[Handler], Handler]:
        """Register the decorated handler as a prompt."""

        def register(handler: Handler) -> Handler:
            self.prompts[name] = Prompt(name, description, arguments or [], handler)
            return handler

        return register

    def resource(
        self, uri: str, name: str, description: str, mime_type: str = "text/plain"
    ) -> Callable[[Handler], Handler]:
        """Register the decorated handler as the resource at `uri`."""

        def register(handler: Handler) -> Handler:
            self.resources[uri] = Resource(uri, name, description, mime_type, handler)
            return handler

        return register

    def template(
        self, uri_template: str, name: str, description: str, mime_type: str = "text/plain"
    ) -> Callable[[Handler], Handler]:
        """Register the decorated handler for every URI matching `uri_template`."""

        def register(handler: Handler) -> Handler:
            self.templates.append(
                Resource(uri_template, name, description, mime_type, handler, uri_template)
            )
            return handler

        return register

    def find_resource(self, uri: str) -> tuple[Resource, dict[str, str]] | None:
        """The resource serving `uri` and the template variables it matched."""
        fixed = self.resources.get(uri)
        if fixed is not None:
            return fixed, {}
        for template in self.templates:
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None

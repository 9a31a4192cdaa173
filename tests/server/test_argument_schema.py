"""A tool's arguments are checked against its input schema, JSON Schema 2020-12 by default."""

from __future__ import annotations

from typing import Any

import pytest

from server.core.catalog import Tool


async def _never(ctx: Any) -> dict[str, Any]:
    raise AssertionError("the check does not run the tool")


def tool(schema: dict[str, Any]) -> Tool:
    return Tool("t", "a tool", schema, _never)


UNITS = {
    "type": "object",
    "properties": {"units": {"type": "integer", "minimum": 0, "maximum": 50_000_000}},
    "required": ["units"],
}


@pytest.mark.parametrize("units", [0, 5, 50_000_000])
def test_integers_within_bounds_pass(units: Any) -> None:
    assert tool(UNITS).argument_errors({"units": units}) == []


@pytest.mark.parametrize("units", [5.0, 1e3])
def test_a_count_written_as_a_float_is_refused_though_json_schema_calls_it_an_integer(
    units: float,
) -> None:
    # A handler counting with 5.0 gets a float: range() and to_bytes() fail on it.
    assert tool(UNITS).argument_errors({"units": units}) == [
        f"arguments.units: {units!r} is not an integer (write it as {units:.0f})"
    ]


def test_a_float_integer_is_found_in_nested_objects_and_arrays() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"count": {"type": "integer"}}},
            }
        },
    }
    errors = tool(schema).argument_errors({"items": [{"count": 1}, {"count": 2.0}]})
    assert errors == ["arguments.items[1].count: 2.0 is not an integer (write it as 2)"]


@pytest.mark.parametrize(
    ("units", "words"),
    [
        (5.5, "integer"),
        (True, "integer"),  # a JSON boolean is not a number
        ("5", "integer"),
        (-1, "minimum"),
        (2**70, "maximum"),  # beyond 64 bits, still compared exactly
        (-(2**70), "minimum"),
    ],
)
def test_a_bad_argument_is_named_with_why(units: Any, words: str) -> None:
    (error,) = tool(UNITS).argument_errors({"units": units})
    assert error.startswith("arguments.units: ") and words in error


def test_a_missing_property_and_a_nested_position_are_named() -> None:
    assert tool(UNITS).argument_errors({}) == ['arguments: "units" is a required property']
    nested = tool(
        {
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        }
    )
    assert nested.argument_errors({"tags": ["a", 3, "b", None]}) == [
        'arguments.tags[1]: 3 is not of type "string"',
        'arguments.tags[3]: null is not of type "string"',
    ]


def test_the_default_dialect_is_2020_12() -> None:
    # `prefixItems` exists only from 2020-12 on; a draft-07 checker would ignore it.
    pair = tool(
        {
            "type": "object",
            "properties": {
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}
            },
        }
    )
    assert pair.argument_errors({"pair": ["a", 1]}) == []
    assert pair.argument_errors({"pair": [1, "a"]}) != []


def test_refs_to_defs_are_followed() -> None:
    address = tool(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "properties": {"zip": {"$ref": "#/$defs/zip"}},
        }
    )
    assert address.argument_errors({"zip": "75001"}) == []
    (error,) = address.argument_errors({"zip": "7500"})
    assert error.startswith("arguments.zip: ")

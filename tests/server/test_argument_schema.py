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


@pytest.mark.parametrize("units", [0, 5, 5.0, 50_000_000])
def test_integers_within_bounds_pass_including_a_float_with_no_fraction(units: Any) -> None:
    assert tool(UNITS).argument_errors({"units": units}) == []


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

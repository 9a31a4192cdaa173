"""Data a JSON Schema accepts, drawn as a user population would send it: a pool of
examples per schema, drawn once and deterministically (hypothesis-jsonschema, under a
fixed seed, no example database), then sampled with the caller's seeded `random`.

Hypothesis is a test-case generator, not a sampler: its strategies are not meant to be
drawn one value at a time in a loop (`example()` says so). A pool is drawn the way
hypothesis is meant to run, as one `@given` run of `max_examples` cases, and each case is
kept if the schema's own validator (jsonschema-rs, formats checked) accepts it: an
answer the lab sends is one the schema allows. Objects are composed field by field, so
a nested form or argument gets each field's own strategy.
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

import jsonschema_rs
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException

#: Examples drawn for a schema's pool (fewer stay when the schema allows fewer values).
POOL_SIZE = 30
#: The largest integer every JSON peer reads exactly (2**53 - 1).
SAFE_INTEGER = 2**53 - 1
#: What makes a string schema more than free text (left to hypothesis-jsonschema).
_SHAPED_TEXT = {"pattern", "format", "enum", "const", "oneOf", "anyOf", "allOf", "not"}
#: The seed every pool is drawn under: the same schema gives the same pool on every run.
POOL_SEED = 36


class SchemaPool:
    """Values one JSON Schema accepts, drawn once; `draw(rng)` samples one of them."""

    def __init__(self, schema: dict[str, Any], values: list[Any]) -> None:
        self.schema = schema
        self.values = values

    def draw(self, rng: random.Random) -> Any:
        """One value of the pool, chosen by `rng` (the caller's seeded generator)."""
        if not self.values:
            raise ValueError(
                f"no value drawn fits the schema {json.dumps(self.schema)[:200]} (the server's "
                "schema admits none the lab can draw)"
            )
        return rng.choice(self.values)


def pool_for(schema: dict[str, Any]) -> SchemaPool:
    """The pool of `schema` (drawn on first use, then kept for the process)."""
    return _pool(json.dumps(schema, sort_keys=True))


@functools.cache
def _pool(schema_text: str) -> SchemaPool:
    schema = json.loads(schema_text)
    validator = jsonschema_rs.validator_for(schema, validate_formats=True)
    found: list[Any] = []
    try:
        strategy = strategy_for(schema)
    except HypothesisException:
        return SchemaPool(schema, found)  # a schema no value satisfies: an empty pool

    @seed(POOL_SEED)
    @settings(
        database=None,
        max_examples=POOL_SIZE,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(value: Any) -> None:
        if validator.is_valid(value) and value not in found:
            found.append(value)

    try:
        collect()
    except HypothesisException:
        # A schema nothing satisfies (an empty enum, contradicting bounds): an empty pool,
        # which `draw` refuses naming the schema, the server's fault.
        found.clear()
    return SchemaPool(schema, found)


def strategy_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A hypothesis strategy for `schema`: an object field by field (each property's own
    strategy, the optional ones sometimes left out), anything else from
    hypothesis-jsonschema."""
    properties = schema.get("properties")
    if schema.get("type") == "object" and isinstance(properties, dict):
        required = set(schema.get("required") or [])
        return st.fixed_dictionaries(
            {name: strategy_for(spec) for name, spec in properties.items() if name in required},
            optional={
                name: strategy_for(spec)
                for name, spec in properties.items()
                if name not in required
            },
        )
    if schema.get("type") == "object":
        # Free-form: a few entries of plain values (hypothesis-jsonschema's own object
        # strategy is not used: it fails on the hypothesis releases the lab installs).
        extra = schema.get("additionalProperties")
        return st.dictionaries(
            st.text(alphabet="abcdefghijklmnopqrstuvwxyz._", min_size=1, max_size=12),
            strategy_for(extra) if isinstance(extra, dict) else _plain_values,
            max_size=3,
        )
    items = schema.get("items")
    if schema.get("type") == "array" and isinstance(items, dict):
        return st.lists(
            strategy_for(items),
            min_size=int(schema.get("minItems", 0)),
            max_size=int(schema.get("maxItems", 5)),
            unique_by=(lambda v: json.dumps(v, sort_keys=True))
            if schema.get("uniqueItems")
            else None,
        )
    if schema.get("type") == "string" and not (_SHAPED_TEXT & set(schema)):
        # Free text as a person types it: letters, digits, spaces and punctuation, of the
        # Basic Multilingual Plane (a JavaScript server counts a length in UTF-16 units).
        return st.text(
            alphabet=st.characters(categories=("L", "N", "Zs", "P"), max_codepoint=0xFFFF),
            min_size=int(schema.get("minLength", 0)),
            max_size=int(schema.get("maxLength", 40)),
        )
    # Loaded on first use: it loads jsonschema's format checkers, seconds of grammar
    # building that a command refused before it draws anything need not wait for.
    from hypothesis_jsonschema import from_schema

    if schema.get("format") == "email" and not (_SHAPED_TEXT - {"format"}) & set(schema):
        return _plain_emails(schema)
    if schema.get("type") == "integer":
        # Integers a JSON peer reads exactly (I-JSON, RFC 7493), unless the schema says less.
        schema = {"minimum": -SAFE_INTEGER, "maximum": SAFE_INTEGER, **schema}
    return from_schema(schema)


#: The values of a free-form object's entries: what a person writes in a form field.
_plain_values = (
    st.booleans()
    | st.integers(-1000, 1000)
    | st.text(alphabet=st.characters(categories=("L", "N", "Zs")), max_size=12)
)
#: The top-level domains of the addresses a user types.
EMAIL_DOMAINS = ("org", "com", "net", "io", "example")


def _plain_emails(schema: dict[str, Any]) -> st.SearchStrategy[str]:
    """Addresses as people have them (`name.part@host.org`): the RFC allows far stranger
    ones, which many servers' own checks refuse although `format: email` accepts them."""
    local = st.from_regex(r"[a-z][a-z0-9]{0,7}(\.[a-z][a-z0-9]{0,7})?", fullmatch=True)
    host = st.from_regex(r"[a-z][a-z0-9]{1,9}", fullmatch=True)
    addresses = st.builds(
        lambda name, at, top: f"{name}@{at}.{top}", local, host, st.sampled_from(EMAIL_DOMAINS)
    )
    shortest, longest = int(schema.get("minLength", 0)), int(schema.get("maxLength", 254))
    return addresses.filter(lambda address: shortest <= len(address) <= longest)

"""Elicitation answers checked against the whole schema the server asked with.

`server.protocol.inputs` reads an answer's shape (accept, decline or cancel; with accept,
an object of content). This checks what the user typed against the form's
`requestedSchema` itself: required fields, types, `enum`, `minimum`, `maximum`,
`minLength`, `maxLength`, `pattern`, `format` and the rest, with jsonschema-rs, the library
the catalog checks tool arguments with. An answer that does not fit is no answer: the
channel asks the question again, saying why (`InputRequest.again`), on either protocol era
and in a task alike.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import jsonschema_rs
import orjson

from server.protocol.inputs import Elicited, InputRequest

#: Longest reason given back: the message may quote what the user typed, which is theirs
#: to see again but need not travel in full.
MAX_REASON_CHARS = 300
#: Most schema violations named in one reason.
MAX_VIOLATIONS = 3


def schema_problem(request: InputRequest, parsed: Any) -> str | None:
    """Why an accepted elicitation answer does not fit the form asked for (None: it fits).

    Anything but an accepted elicitation (a decline, a sample, roots) has no form to fit.
    """
    if type(parsed) is not Elicited or parsed.action != "accept":
        return None
    schema = request.params.get("requestedSchema")
    if not schema:
        return None
    validator = _validator_of(schema)
    if validator.is_valid(parsed.content):
        return None
    found = []
    for error in validator.iter_errors(parsed.content):
        found.append(f"{_where(error.instance_path)}{error.message}")
        if len(found) == MAX_VIOLATIONS:
            break
    reason = "; ".join(found)
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 3] + "..."


#: The validator of each schema object a form was last asked with, by its identity, beside
#: a copy of the schema it was built for (bounded: cleared past 256 objects).
_by_identity: dict[int, tuple[Any, Any, Any]] = {}


def _validator_of(schema: Any) -> Any:
    """The validator for a form's schema, found without writing the schema out.

    A tool asks with the same schema object on every run (a module's constant), so that
    object finds its validator again, while it is held here (its id is not reused) and still
    equal to the copy the validator was built for (not changed since in place). Any other
    schema is written out as sorted JSON and looked up by that.
    """
    held = _by_identity.get(id(schema))
    if held is not None and held[0] is schema and held[1] == schema:
        return held[2]
    validator = _validator(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    if len(_by_identity) >= 256:
        _by_identity.clear()
    _by_identity[id(schema)] = (schema, copy.deepcopy(schema), validator)
    return validator


@lru_cache(maxsize=256)
def _validator(schema_json: bytes) -> Any:
    """A validator for a form, built once per distinct schema (keyed by its sorted JSON:
    a tool may build the same form anew on every run)."""
    return jsonschema_rs.validator_for(orjson.loads(schema_json), validate_formats=True)


def _where(path: Sequence[str | int]) -> str:
    """Which field an error is about, as `name: ` (empty for the form as a whole)."""
    return ".".join(str(step) for step in path) + ": " if path else ""

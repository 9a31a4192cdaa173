"""How a target's users answer what its tools ask: every form answered validly.

A form (`elicitation/create`) is answered from its `requestedSchema`: each field drawn
from what the spec allows there (enum and titled oneOf, minimum/maximum,
minLength/maxLength, pattern, formats, booleans with their defaults), unless the
workload file states the field for that question (by its key or its message) or for
any question that asks it. A share of users declines and a share cancels, as the
workload file sets. Sampling and roots are answered from the workload file.
"""

from __future__ import annotations

import random
from typing import Any

from loadtest.target.schema_data import pool_for
from loadtest.target.workload import FieldValues, ToolWorkload, Workload, check_values

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
LIST_ROOTS = "roots/list"
#: What a user says to a model's sampling request when the workload file does not say.
DEFAULT_SAMPLE_TEXT = "Paris"
DEFAULT_ROOTS = [{"uri": "file:///srv/workspace", "name": "workspace"}]


class TargetAnswers:
    """The users of one tool of a target, answering its questions (an `Answerer`)."""

    def __init__(self, table: ToolWorkload, workload: Workload | None = None) -> None:
        self.table = table
        self.workload = workload or Workload()

    def __call__(self, key: str, request: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        method = request.get("method")
        params = request.get("params") or {}
        if method == SAMPLE:
            return {
                "role": "assistant",
                "content": {
                    "type": "text",
                    "text": self.workload.sampling.get("text", DEFAULT_SAMPLE_TEXT),
                },
                "model": self.workload.sampling.get("model", "workload-model"),
                "stopReason": "endTurn",
            }
        if method == LIST_ROOTS:
            return {"roots": self.workload.roots or DEFAULT_ROOTS}
        roll = rng.random()
        if roll < self.table.decline_share:
            return {"action": "decline"}
        if roll < self.table.decline_share + self.table.cancel_share:
            return {"action": "cancel"}
        schema = params.get("requestedSchema") or {"type": "object", "properties": {}}
        return {"action": "accept", "content": self.form(key, params, schema, rng)}

    def form(
        self, key: str, params: dict[str, Any], schema: dict[str, Any], rng: random.Random
    ) -> dict[str, Any]:
        """A form's content: drawn from its schema, the fields the workload states from it."""
        content = dict(pool_for(schema).draw(rng))
        properties = schema.get("properties") or {}
        stated = self._stated(key, str(params.get("message", "")))
        for name, values in stated.items():
            if name not in properties:
                continue  # the workload's field for another question
            check_values(values, properties[name], f"answers.{key}.{name}")
            content[name] = values.next(rng, properties[name])
        return content

    def _stated(self, key: str, message: str) -> dict[str, FieldValues]:
        """What the workload states for this question: its fields by field name, then the
        question's own table (by key, or by its message)."""
        question = self.table.questions.get(key) or self.table.questions.get(message) or {}
        return {**self.table.fields, **question}


def answers_for(tool: str, workload: Workload | None) -> TargetAnswers:
    """The answerer of `tool`'s questions under `workload` (schema-drawn answers alone
    when there is none)."""
    if workload is None:
        return TargetAnswers(ToolWorkload())
    return TargetAnswers(workload.for_tool(tool), workload)

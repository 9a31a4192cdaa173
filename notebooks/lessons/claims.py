"""Claims a notebook's prose makes about its results, checked where they are made.

A lesson says "MRTR asks nobody again" under a table the notebook has just computed. If
the server or the model changes, the table changes with it, and the sentence above it
becomes a false lesson that nobody notices. So each such sentence is also stated as a
`claim`, right where the prose makes it: it prints the sentence with a tick when the
results bear it out, and stops the notebook with the sentence and the numbers that
contradict it when they do not. Run All then fails, in a class or in the tests, instead
of teaching something that is no longer true.

    claim(summary["re_prompts"] == 0, "MRTR asks nobody again", asked_again=summary["re_prompts"])
"""

from __future__ import annotations

from typing import Any


class ClaimFailed(AssertionError):
    """A notebook's sentence about its results that the results no longer bear out."""


def claim(holds: Any, text: str, **evidence: Any) -> None:
    """Check that `holds` is true for the sentence `text`, and say so.

    `evidence` names the numbers the sentence rests on; they are shown if it fails, so the
    reader sees at once what changed. A claim that holds prints one line: the sentence.
    """
    if not bool(holds):
        shown = "".join(f"\n    {name} = {value!r}" for name, value in evidence.items())
        raise ClaimFailed(f"The notebook says: {text}\nbut the results here do not:{shown}")
    print(f"\N{CHECK MARK} {text}")

"""One check of a deployment as the doctor reports it: its name, whether it passed, what
was seen, and what an operator does about it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    """The outcome of one check: passed or failed, the evidence, and the fix in words an
    operator can act on (empty when it passed)."""

    name: str
    passed: bool
    evidence: str
    fix: str = ""
    #: What the check measured, by name with its unit (`ttl_at_least_s`); empty when none.
    figures: dict[str, float | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """`{name, passed, evidence, fix, figures}`, the form `--json` writes."""
        return asdict(self)


def passed(name: str, evidence: str, figures: dict[str, float | None] | None = None) -> Finding:
    """A check that held (and what it measured)."""
    return Finding(name, True, evidence, figures=dict(figures or {}))


def failed(
    name: str, evidence: str, fix: str, figures: dict[str, float | None] | None = None
) -> Finding:
    """A check that did not hold, with what to do (and what it measured)."""
    return Finding(name, False, evidence, fix, dict(figures or {}))


def not_checked(name: str, why: str) -> Finding:
    """A check the deployment as given gives no way to run; it does not stop readiness."""
    return Finding(name, True, f"not checked: {why}")

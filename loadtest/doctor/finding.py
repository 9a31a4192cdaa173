"""One check of a deployment as the doctor reports it: its name, whether it passed, what
was seen, and what an operator does about it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """The outcome of one check: passed or failed, the evidence, and the fix in words an
    operator can act on (empty when it passed)."""

    name: str
    passed: bool
    evidence: str
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        """`{name, passed, evidence, fix}`, the form `--json` writes."""
        return asdict(self)


def passed(name: str, evidence: str) -> Finding:
    """A check that held."""
    return Finding(name, True, evidence)


def failed(name: str, evidence: str, fix: str) -> Finding:
    """A check that did not hold, with what to do."""
    return Finding(name, False, evidence, fix)


def not_checked(name: str, why: str) -> Finding:
    """A check the deployment as given gives no way to run; it does not stop readiness."""
    return Finding(name, True, f"not checked: {why}")

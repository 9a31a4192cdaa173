"""The doctor's report: each check's finding, the failed ones first, and whether the
deployment is ready for MRTR (every check passed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Report:
    """Every finding of one examination, failed first."""

    findings: tuple[Any, ...]

    @property
    def ready(self) -> bool:
        """Ready for MRTR: no check failed."""
        return all(f.passed for f in self.findings)

    def ordered(self) -> list[Any]:
        """The findings, the failed ones first, each group in the order it ran."""
        return [f for f in self.findings if not f.passed] + [f for f in self.findings if f.passed]

    def to_json(self) -> dict[str, Any]:
        """`{ready, checks: [{name, passed, evidence, fix, figures}]}`."""
        return {"ready": self.ready, "checks": [f.to_json() for f in self.ordered()]}

    def text(self) -> str:
        """The report as an operator reads it."""
        lines = []
        for finding in self.ordered():
            mark = "PASS" if finding.passed else "FAIL"
            lines.append(f"{mark}  {finding.name}: {finding.evidence}")
            if finding.fix:
                lines.append(f"      fix: {finding.fix}")
        verdict = "ready for MRTR" if self.ready else "NOT ready for MRTR"
        failed = sum(not f.passed for f in self.findings)
        lines.append(f"{verdict}: {len(self.findings) - failed} checks passed, {failed} failed")
        return "\n".join(lines)

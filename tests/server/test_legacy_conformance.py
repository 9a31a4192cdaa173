"""The official MCP conformance suite's 2025-11-25 requirement set against the legacy era."""

from __future__ import annotations

import pytest

from server.harness.conformance import report, run_suite
from server.harness.process import ServerProcess

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

# The legacy elicitation scenarios the lab's server must pass; all must pass.
REQUIRED = [
    "server-initialize",
    "server-session-lifecycle",
    "tools-call-elicitation",
    "tools-call-sampling",
    "ping",
    "tools-list",
]


def test_the_2025_11_25_requirement_set_passes(conformance_server: ServerProcess, capsys) -> None:
    results = run_suite(conformance_server.url, requirements="2025-11-25")
    with capsys.disabled():
        print()
        report(results)
    by_name = {r.name: r for r in results}
    for name in REQUIRED:
        assert by_name[name].passed, (name, by_name[name].failures)
    scored = [r for r in results if r.scored]
    assert len(scored) >= 30
    assert all(r.passed for r in scored), [r.name for r in scored if not r.passed]

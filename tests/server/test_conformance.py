"""The official MCP conformance suite against `python -m server --conformance`."""

from __future__ import annotations

import pytest

from server.harness.conformance import report, run_suite

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

# The MRTR scenarios the lab's server must pass; all must pass.
REQUIRED = [
    "server-stateless",
    "http-header-validation",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "prompts-list",
    "prompts-get-simple",
    "resources-list",
    "resources-read-text",
]


def test_the_whole_2026_07_28_requirement_set_passes(conformance_server, capsys) -> None:
    results = run_suite(conformance_server.url, requirements="2026-07-28")
    with capsys.disabled():
        print()
        report(results)
    by_name = {r.name: r for r in results}
    mrtr = [name for name in by_name if name.startswith("input-required-result-")]
    assert len(mrtr) >= 14
    for name in REQUIRED + mrtr:
        assert by_name[name].passed, (name, by_name[name].failures)
    scored = [r for r in results if r.scored]
    assert scored and all(r.passed for r in scored), [r.name for r in scored if not r.passed]

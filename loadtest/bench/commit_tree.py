"""Another commit's server, checked out apart, so the bench runs it beside today's.

`python -m loadtest bench --compare-commit REV` extracts the `server` package of commit
REV (`git archive`) into a temporary directory and starts it there with the same
interpreter and libraries as today's lab, under the same flags, pinned and driven like
every other server. Its rounds are timed in the same interleaved passes, so what a change
costs is read side by side, in one run, on one machine, rather than from two runs hours
apart. The directory is removed when the run ends, whatever happened.

Flags the older server does not know (a cap added since) are left out of its command
line: it runs with what it had, at its own defaults.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loadtest.bench.targets import LAB_OPTIONS, STACK, Target
from loadtest.config import LoadTestError

#: The project's root, whose git history the commit is taken from.
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CommitTree:
    """The `server` package of one commit, extracted into a directory of its own."""

    commit: str  # the full hash
    path: Path

    @property
    def name(self) -> str:
        """The server's name in the bench's report: the lab at that commit."""
        return f"lab@{self.commit[:7]}"

    def target(self, port: int) -> Target:
        """That commit's lab on 127.0.0.1:`port`, with the bench's options it knows."""
        command = [sys.executable, "-m", "server", "--port", str(port), *STACK]
        command += known_options(LAB_OPTIONS, self.help_text())
        return Target(self.name, command, "/healthz", {"PYTHONPATH": str(self.path)}, self.path)

    def help_text(self) -> str:
        """What that commit's `python -m server --help` prints: the flags it knows."""
        shown = subprocess.run(
            [sys.executable, "-m", "server", "--help"],
            cwd=self.path,
            env=_environment(self.path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if shown.returncode != 0:
            raise LoadTestError(f"{self.name} does not start: {shown.stderr.strip()[-300:]}")
        return shown.stdout


def known_options(options: list[str], help_text: str) -> list[str]:
    """The flag-value pairs of `options` whose flag `help_text` names; the rest left out."""
    pairs = zip(options[::2], options[1::2], strict=True)
    words = set(help_text.replace(",", " ").replace("=", " ").split())
    return [item for flag, value in pairs if flag in words for item in (flag, value)]


def _environment(path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(path), "PYTHONWARNINGS": "ignore"}


def resolve(rev: str, root: Path = PROJECT_ROOT) -> str:
    """The full hash of `rev` in the project's history; a LoadTestError if there is none."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        raise LoadTestError(f"--compare-commit: no commit {rev!r} in this repository")
    return found.stdout.strip()


@contextmanager
def checked_out(rev: str, root: Path = PROJECT_ROOT) -> Iterator[CommitTree]:
    """The `server` package of commit `rev` in a temporary directory, removed afterwards."""
    commit = resolve(rev, root)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit, "server"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    with tempfile.TemporaryDirectory(prefix=f"mrtr-bench-{commit[:7]}-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        yield CommitTree(commit, Path(tmp))

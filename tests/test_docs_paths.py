"""Every file or folder the README and the docs name is in the repository.

A page names a path three ways: in inline code (`server/app.py`, or a bare file name such
as `plan_walk.py` where the sentence gives its folder), as a word of a code block
(`python -m labsim plan --out notebooks/recorded/...`), and as a relative Markdown link.
A path whose first part is a top-level entry of the repository must exist (a glob must
match something); a bare file name must be the name of some file in it; a link must lead
to a file from the page's own folder. What a command writes (set-up, the book, reports)
and names that only look like paths are excused below, each with its reason.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Suffixes that make a bare name in inline code a file name.
FILE_SUFFIXES = (
    ".py", ".md", ".toml", ".json", ".ipynb", ".txt", ".yml", ".yaml", ".html", ".csv",
    ".js", ".mjs", ".png", ".svg", ".cfg", ".lua",
)  # fmt: skip
#: Written by a command, so absent from a fresh clone: `make setup` (the venv, the
#: conformance suite, Node and the TypeScript peer), `make report` and `make book` (build/).
WRITTEN_BY_COMMANDS = (".venv", ".tools", "build")
#: File names a page gives for what a command writes.
WRITTEN_FILES = {
    "out.html": "the report `python -m loadtest report` writes beside its input",
    "out.mrtr.html": "the same report, one per architecture, for `compare`",
    "index.html": "the book's front page, written by `make book`",
}
#: Names that look like paths and are not: protocol methods named like a folder's file.
NOT_PATHS = {
    "server/discover": "an MCP method (like tools/call), not the server package's file",
}
#: Folders never searched for a bare file name: what set-up and builds write.
UNSEARCHED = {".git", "__pycache__", "node_modules", *WRITTEN_BY_COMMANDS}

FENCE = re.compile(r"^[ \t]*```\w*\n(.*?)^[ \t]*```", re.M | re.S)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
WORD = re.compile(r"[\w.\-/*]+")


def top_level_entries(root: Path) -> set[str]:
    """The names of the repository's top-level files and folders, outputs included."""
    return {entry.name for entry in root.iterdir()} | set(WRITTEN_BY_COMMANDS)


def file_names(root: Path) -> set[str]:
    """Every file and folder name in the repository, outputs left out."""
    names: set[str] = set()
    for _, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f not in UNSEARCHED and not f.endswith(".egg-info")]
        names.update(folders)
        names.update(files)
    return names


def _placeholder(text: str) -> bool:
    return any(mark in text for mark in ("<", ">", "...", "{", "}"))


def _file_name(text: str) -> bool:
    return "/" not in text and text.endswith(FILE_SUFFIXES) and text not in FILE_SUFFIXES


def named_paths(text: str, tops: set[str]) -> list[str]:
    """The repository paths and bare file names a Markdown page names, in order."""
    named: list[str] = []
    for block in FENCE.findall(text):
        named += [w for w in WORD.findall(block) if "/" in w and w.split("/")[0] in tops]
    for span in INLINE_CODE.findall(FENCE.sub("", text)):
        span = span.strip()
        if " " in span or _placeholder(span):
            continue
        if span.split("/")[0] in tops or _file_name(span):
            named.append(span)
    return named


def excused(path: str) -> bool:
    """Whether a named path is a command's output or not a path at all."""
    first = path.split("/")[0]
    return first in WRITTEN_BY_COMMANDS or path in WRITTEN_FILES or path in NOT_PATHS


def missing_paths(page: Path, text: str, root: Path) -> list[str]:
    """What `text` (the page at `page`) names that is not in the repository at `root`."""
    tops = top_level_entries(root)
    names = file_names(root)
    missing: list[str] = []
    for path in named_paths(text, tops):
        if excused(path):
            continue
        if "/" not in path:
            found = path in names
        elif "*" in path:
            found = any(root.glob(path.rstrip("/")))
        else:
            found = (root / path).exists()
        if not found:
            missing.append(path)
    for target in LINK.findall(text):
        target = target.split("#")[0]
        if not target or "://" in target or target.startswith("mailto:"):
            continue
        if not (page.parent / target).exists():
            missing.append(target)
    return missing


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_path_a_page_names_is_in_the_repository(page: Path) -> None:
    assert missing_paths(page, page.read_text(), ROOT) == []


def test_a_path_that_is_not_there_is_named() -> None:
    page = ROOT / "docs" / "server.md"
    text = (
        "The guard (`server/transport/guard.py`) and the timeout "
        "(`server/transport/header_timeout.py`); `wire_limits.py` and `gone_module.py`; "
        "see [the model](model.md) and [the old page](old.md).\n"
        "```sh\npython -m labsim plan --out labsim/nowhere/plan.json\n```\n"
    )
    assert missing_paths(page, text, ROOT) == [
        "labsim/nowhere/plan.json",
        "server/transport/header_timeout.py",
        "gone_module.py",
        "old.md",
    ]


def test_what_a_command_writes_and_method_names_are_excused() -> None:
    text = "`build/book/student/`, `.venv/bin/python`, `out.html`, `server/discover`, `tools/call`"
    assert missing_paths(ROOT / "README.md", text, ROOT) == []

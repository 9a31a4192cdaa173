"""Every command the README and the docs show runs as pasted.

The commands are read from the pages themselves: the lines of `sh`/`bash`/`console`
blocks (and `$ ` lines of output blocks), and inline code that starts with `python -m` or
`make`. Each is written one way (`python -m PACKAGE ...` in the project's environment),
each `python -m` command parses with the package's own parser (so a pasted placeholder such
as `--arch A` fails here, as it would for a reader), each `make` target exists, and the
quick ones run for real.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCKS = {"sh", "bash", "shell", "console"}
#: Programs a page may show besides the project's own, checked no further.
OTHER_PROGRAMS = {
    "pip", "git", "conda", "jupytext", "cd", "python3", ".", "source", "apt-get", "npm",
    "node", "export", "wrk", "redis-server", "haproxy", "perf", "valgrind", "curl", "ls",
    "kill", "jq", "echo",
}  # fmt: skip
#: What the shell puts in place of its expansions before a program sees its words.
SHELL_EXPANSIONS = {"$!": "12345"}  # the last background job's pid
#: A shell variable a page sets (`SERVER_PID=$!`, a loop's `tool`): a word where it is used.
SHELL_VARIABLE = re.compile(r"\$\{?[A-Za-z_]\w*\}?")
#: A variable set before a program's words (`NAME=value cmd`), or alone on its line.
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=\S*$")
#: The shell's own loop lines: their body is checked as its own lines.
LOOP_LINE = re.compile(r"^(for \w+ in .*; do|done)$")
PROJECT_PACKAGES = ("server", "labsim", "loadtest")
#: Commands cheap enough to run on every test run: (package, subcommand).
QUICK = {("labsim", "scenarios"), ("labsim", "mmc"), ("server", "token")}
RUN_TIMEOUT_S = 120


def _joined_lines(block: str) -> list[str]:
    """A block's lines with `\\` continuations joined."""
    lines: list[str] = []
    pending = ""
    for raw in block.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    return lines


def commands_of(text: str) -> list[str]:
    """The commands a Markdown page shows, as a reader would paste them."""
    found: list[str] = []
    fence = re.compile(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", re.M | re.S)
    for language, block in fence.findall(text):
        for line in _joined_lines(block):
            stripped = line.strip()
            if stripped.startswith("$ "):
                stripped = stripped[2:]
            elif language not in SHELL_BLOCKS or language == "console":
                continue
            stripped = re.sub(r"\s+#(\s.*)?$", "", stripped).strip()
            if stripped and not stripped.startswith("#"):
                found.append(stripped)
    prose = fence.sub("", text)
    for span in re.findall(r"`([^`]+)`", prose):
        span = " ".join(span.split())
        if span.startswith(("python -m ", "make ", ".venv/bin/")) and " " in span:
            found.append(span)
    return found


def documented_commands() -> list[tuple[str, str]]:
    return [
        (str(page.relative_to(ROOT)), command)
        for page in PAGES
        for command in dict.fromkeys(commands_of(page.read_text()))
    ]


def _server_parser(argv: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    from server.__main__ import serve_parser, token_parser
    from server.harness.conformance import conformance_parser

    subcommands: dict[str, Callable[[], argparse.ArgumentParser]] = {
        "token": token_parser,
        "conformance": conformance_parser,
    }
    if argv and argv[0] in subcommands:
        return subcommands[argv[0]](), argv[1:]
    return serve_parser(), argv


def _labsim_parser(argv: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    from labsim.cli.main import parser

    return parser(), argv


def _loadtest_parser(argv: list[str]) -> tuple[argparse.ArgumentParser, list[str]]:
    from loadtest.__main__ import build_parser

    return build_parser(), argv


PARSERS = {"server": _server_parser, "labsim": _labsim_parser, "loadtest": _loadtest_parser}


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, re.M))


def problem_with(command: str) -> str | None:
    """Why a reader's paste would fail, or None. The program sees its words only: a
    redirection or a trailing `&` is the shell's, and `$!` a pid."""
    if LOOP_LINE.match(command):
        return None
    words = [SHELL_EXPANSIONS.get(word, word) for word in shlex.split(command)]
    words = [SHELL_VARIABLE.sub("1", word) for word in words]
    for i, word in enumerate(words):
        if word in {">", ">>", "&", "|"}:
            words = words[:i]
            break
    while words and ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words:
        return None
    if words[0] == "python" and len(words) > 1 and words[1].endswith(".py"):
        return None if (ROOT / words[1]).is_file() else f"no script {words[1]} in the project"
    if words[0].startswith(".venv/"):
        return "written with .venv/bin/: write `python -m ...` (the environment is active)"
    if words[0] == "make":
        missing = [w for w in words[1:] if "=" not in w and w not in makefile_targets()]
        return f"no make target {missing}" if missing else None
    if words[:2] == ["python", "-m"] and words[2] in PROJECT_PACKAGES:
        parser, argv = PARSERS[words[2]](words[3:])
        try:
            parser.parse_args(argv)
        except SystemExit as exit_:
            return None if exit_.code == 0 else "the package's parser refuses it"
        return None
    if words[0] in OTHER_PROGRAMS or words[:2] == ["python", "-m"]:
        return None
    return f"unknown program {words[0]!r}: a page shows only the project's commands"


def test_the_pages_show_commands() -> None:
    pages = {page for page, _ in documented_commands()}
    assert "README.md" in pages
    assert len(documented_commands()) >= 20


@pytest.mark.parametrize(("page", "command"), documented_commands())
def test_a_documented_command_parses_as_pasted(page: str, command: str) -> None:
    assert problem_with(command) is None, f"{page}: {command}: {problem_with(command)}"


def test_a_placeholder_is_caught() -> None:
    assert problem_with("python -m loadtest scenario steady --arch A") is not None
    assert problem_with("python -m labsim plan --rate") is not None
    assert problem_with("make nothing-like-this") is not None
    assert problem_with(".venv/bin/python -m labsim scenarios") is not None
    assert problem_with("python tests/no_such_server.py 8000 &") is not None
    assert problem_with("python -m loadtest measure --tool $tool --calls many") is not None


def test_the_shell_a_reader_pastes_is_the_shells() -> None:
    assert problem_with("SERVER_PID=$!") is None
    assert problem_with("for tool in a b; do") is None
    assert problem_with("SDK_STATE_KEY=own python tests/loadtest/sdk_server.py 8001 &") is None
    assert problem_with("python -m loadtest measure --tool $tool --pid $SERVER_PID") is None


def _quick(command: str) -> bool:
    words = shlex.split(command)
    if words[:2] != ["python", "-m"] or words[2] not in PROJECT_PACKAGES:
        return False
    return "--help" in words or (words[2], (words[3:4] or [""])[0]) in QUICK


QUICK_COMMANDS = sorted({c for _, c in documented_commands() if _quick(c)})


@pytest.mark.parametrize("command", QUICK_COMMANDS)
@pytest.mark.slow
def test_a_quick_documented_command_runs(command: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    words = shlex.split(command)
    done = subprocess.run(
        [sys.executable, *words[1:]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-2000:]

"""The teacher's page (docs/classroom.md): its recipe for a class installs the notebooks'
packages alone, with nothing that needs root, and shows what `make lab` shows; its table
has every notebook in order, and names the live parts each notebook checks for."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from tests.test_documented_commands import commands_of
from tests.test_environment import resolved

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "classroom.md"
NOTEBOOKS = sorted(path.stem for path in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
#: What a student's install must not bring: the load test's packages and the tools.
NOT_FOR_STUDENTS = {"locust", "gevent", "flask", "pytest", "selenium", "sphinx", "ruff", "mypy"}
#: What needs root or the full set-up.
NEEDS_ROOT = {"sudo", "apt-get", "apt", "make", "npm", "node", "brew", "conda"}
#: The programs a notebook's live parts check for, by the harness class that runs them.
LIVE_PROGRAMS = {"HAProxy": "HAProxy", "RedisServer": "Redis"}


def recipe() -> list[list[str]]:
    """The commands of the page's first shell block: the class's set-up."""
    block = re.search(r"^```sh\n(.*?)^```", PAGE.read_text(), re.M | re.S)
    assert block is not None
    return [shlex.split(command) for command in commands_of(f"```sh\n{block[1]}```\n")]


def installed_extras() -> list[str]:
    installs = [words for words in recipe() if words[:2] == ["pip", "install"]]
    assert len(installs) == 1, installs
    extras = re.fullmatch(r"\.\[([\w,]+)\]", installs[0][2])
    assert extras is not None and len(installs[0]) == 3, installs[0]
    return extras[1].split(",")


def test_the_recipe_needs_no_root_and_installs_the_notebooks_group_alone() -> None:
    commands = recipe()
    assert [words[0] for words in commands if words[0] in NEEDS_ROOT] == []
    assert ["python3", "-m", "venv", ".venv"] in commands
    assert installed_extras() == ["notebooks"]


@pytest.mark.slow
def test_the_recipes_install_brings_the_notebooks_and_no_load_test() -> None:
    names = resolved(f"[{','.join(installed_extras())}]")
    assert {"jupyterlab", "ipywidgets", "simpy", "matplotlib", "mcp"} <= names
    assert names.isdisjoint(NOT_FOR_STUDENTS), sorted(names & NOT_FOR_STUDENTS)


def test_the_page_asks_for_the_python_the_project_needs() -> None:
    needed = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    version = needed.removeprefix(">=")
    assert f"Python {version} or newer" in PAGE.read_text()


def test_jupyterlab_lists_what_make_lab_lists() -> None:
    makefile = (ROOT / "Makefile").read_text()
    hidden = re.search(r"^HIDE_TWINS = (.*)$", makefile, re.M)
    assert hidden is not None
    lab = [words for words in recipe() if words[:3] == ["python", "-m", "jupyterlab"]]
    assert len(lab) == 1
    assert shlex.split(hidden[1])[0] in lab[0]
    assert "--notebook-dir=notebooks" in lab[0]


def table_rows() -> dict[str, list[str]]:
    rows = {}
    for line in PAGE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 5:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_table_has_every_notebook_in_order_with_both_times() -> None:
    rows = table_rows()
    assert list(rows) == NOTEBOOKS
    for name, (_, quick, full, _) in rows.items():
        for time in (quick, full):
            assert re.fullmatch(r"(about )?\d+ (s|min)( \(.*\))?", time), (name, time)


def test_the_table_names_the_live_parts_each_notebook_checks_for() -> None:
    rows = table_rows()
    for name in NOTEBOOKS:
        source = (ROOT / "notebooks" / f"{name}.py").read_text()
        checked = {
            program
            for harness, program in LIVE_PROGRAMS.items()
            if re.search(rf"\b{harness}\.available\(\)", source)
        }
        live = rows[name][3]
        assert {program for program in LIVE_PROGRAMS.values() if program in live} == checked, (
            name,
            live,
        )

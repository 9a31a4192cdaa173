"""What each install brings: the conda environment lists exactly the Python dependencies
pyproject.toml does, and `pip install .` brings the server alone."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirement_name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0].lower()


def every_requirement() -> set[str]:
    """Every requirement of the project and its groups, the groups' references to the
    project itself (`mrtr-lab[sim]`) left out."""
    groups = PROJECT["optional-dependencies"].values()
    listed = set(PROJECT["dependencies"]).union(*groups)
    return {r for r in listed if requirement_name(r) != PROJECT["name"]}


def test_environment_yml_pip_section_matches_pyproject() -> None:
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in environment["dependencies"] if isinstance(d, dict)]
    assert len(pip_sections) == 1
    assert set(pip_sections[0]) == every_requirement()


def test_environment_yml_pins_the_python_the_project_needs() -> None:
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in environment["dependencies"]
    assert environment["channels"] == ["conda-forge"]


def test_the_groups_name_only_groups_that_exist() -> None:
    groups = PROJECT["optional-dependencies"]
    for requirement in every_requirement() | {r for g in groups.values() for r in g}:
        if requirement_name(requirement) == PROJECT["name"]:
            named = re.findall(r"\[(.*)\]", requirement)[0].split(",")
            assert set(named) <= set(groups), requirement


@functools.cache
def resolved(extras: str) -> frozenset[str]:
    """The distributions `pip install .{extras}` would install into an empty environment,
    resolved by pip itself (nothing is installed); once per test run for each extras."""
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            "-",
            f".{extras}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    if report.returncode != 0:
        pytest.skip(
            f"pip could not resolve the project (no package index?): {report.stderr[-300:]}"
        )
    return frozenset(
        item["metadata"]["name"].lower() for item in json.loads(report.stdout)["install"]
    )


@pytest.mark.slow
def test_installing_the_server_alone_brings_no_lab_tools() -> None:
    names = resolved("")
    assert {"starlette", "uvicorn", "cryptography"} <= names
    assert names.isdisjoint({"jupyterlab", "locust", "simpy", "flask", "matplotlib", "mcp"})


@pytest.mark.slow
def test_the_notebooks_group_brings_no_load_test() -> None:
    names = resolved("[notebooks]")
    assert {"jupyterlab", "simpy", "ipywidgets"} <= names
    assert names.isdisjoint({"locust", "gevent", "flask", "pytest"})

"""The conda environment lists exactly the Python dependencies pyproject.toml does."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_environment_yml_pip_section_matches_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in environment["dependencies"] if isinstance(d, dict)]
    assert len(pip_sections) == 1
    assert set(pip_sections[0]) == wanted


def test_environment_yml_pins_the_python_the_project_needs() -> None:
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in environment["dependencies"]
    assert environment["channels"] == ["conda-forge"]

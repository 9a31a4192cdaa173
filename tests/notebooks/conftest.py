"""The notebooks' tests' kernel and a student's laptop: fixtures of every module here that
executes a notebook."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import nbformat
import pytest

from lessons.execution import SlicedPollClient

#: The kernel spec's name: this very interpreter (the project's venv).
KERNEL_NAME = "mrtr-lab-tests"
#: What a student's laptop with only the notebooks' Python packages lacks.
NOT_ON_A_LAPTOP = ("haproxy", "redis-server", "redis-cli", "node", "npm", "npx")
NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"


def execute(notebook: nbformat.NotebookNode, cell_timeout_s: float) -> float:
    """Run `notebook` in a fresh kernel of this Python (`kernel_on_this_python`, found
    through JUPYTER_PATH), in the notebooks' folder, each cell within `cell_timeout_s`;
    seconds taken."""
    client = SlicedPollClient(
        notebook,
        timeout=cell_timeout_s,
        kernel_name=KERNEL_NAME,
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    started = time.monotonic()
    client.execute()
    return time.monotonic() - started


def printed(notebook: nbformat.NotebookNode) -> str:
    """What the executed notebook printed, every code cell's streams in order."""
    return "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream"
    )


@pytest.fixture(scope="module")
def kernel_on_this_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A kernel spec that starts this very interpreter (the project's venv), by name."""
    spec_dir = tmp_path_factory.mktemp("jupyter") / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "MRTR Lab tests",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return str(spec_dir.parents[1])


@pytest.fixture(scope="module")
def laptop_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PATH with every program of this one but HAProxy, Redis and Node: a folder of links."""
    folder = tmp_path_factory.mktemp("laptop-bin")
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not Path(directory).is_dir():
            continue
        for program in Path(directory).iterdir():
            target = folder / program.name
            if program.name not in NOT_ON_A_LAPTOP and not target.exists():
                target.symlink_to(program)
    return str(folder)

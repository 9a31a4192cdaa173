"""The notebooks: each `.ipynb` and its twin `NN_name.py` beside it agree, carry no outputs,
teach in the agreed shape (goals, parameters, exercises whose solutions hide code and
answer), and run top to bottom
in a fresh kernel on the project's Python with QUICK=1, with at least two figures (the seconds
each took are recorded, not asserted: the machine is shared)."""

from __future__ import annotations

import json
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext.compare import compare_notebooks

from loadtest.harness.haproxy import HAProxy

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "notebooks"))
from execution import SlicedPollClient  # noqa: E402  (the notebooks' own helper)

NOTEBOOKS_DIR = ROOT / "notebooks"
#: The jupytext twins, out of the notebooks' folder so that JupyterLab lists each notebook once.
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))
PAIRING = "ipynb,py:percent"
#: Notebooks that start a real cluster (HAProxy, Redis) and a Locust swarm.
LIVE = {"06_live_swarm"}
#: A bound on one cell, so a hung kernel fails the test instead of stalling the suite. It is
#: not a performance claim: the machine is shared, and the seconds a notebook took are
#: recorded in the test report (`record_property`), not asserted. The slowest cell with
#: QUICK=1 takes seconds, so 120 s leaves room.
CELL_TIMEOUT_S = 120
KERNEL_NAME = "mrtr-lab-tests"


def ids(paths: list[Path]) -> list[str]:
    return [path.stem for path in paths]


def text_notebook(path: Path) -> nbformat.NotebookNode:
    return jupytext.read(path)


def ipynb_path(path: Path) -> Path:
    return NOTEBOOKS_DIR / f"{path.stem}.ipynb"


def committed_notebook(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(ipynb_path(path), as_version=4)


def tagged(notebook: nbformat.NotebookNode, tag: str) -> list[nbformat.NotebookNode]:
    return [cell for cell in notebook.cells if tag in cell.metadata.get("tags", [])]


def test_there_are_notebooks_and_each_has_its_pair() -> None:
    assert len(NOTEBOOKS) >= 6
    assert {p.stem for p in NOTEBOOKS_DIR.glob("*.ipynb")} == {p.stem for p in NOTEBOOKS}


def test_the_folder_pairs_new_notebooks_the_same_way() -> None:
    config = tomllib.loads((NOTEBOOKS_DIR / "jupytext.toml").read_text())
    assert config["formats"] == PAIRING


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_py_and_ipynb_agree(path: Path) -> None:
    ipynb = committed_notebook(path)
    assert ipynb.metadata["jupytext"]["formats"] == PAIRING
    compare_notebooks(ipynb, text_notebook(path), fmt="py:percent")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_committed_ipynb_carries_no_outputs(path: Path) -> None:
    for cell in committed_notebook(path).cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_opens_with_what_the_reader_will_learn_then_its_parameters(path: Path) -> None:
    cells = text_notebook(path).cells
    assert cells[0].cell_type == "markdown" and "What you will learn" in cells[0].source
    assert "parameters" in cells[1].metadata.get("tags", [])
    assert "QUICK" in cells[1].source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_ends_with_exercises_whose_solutions_are_hidden(path: Path) -> None:
    """JupyterLab shows a cell's outputs again when it runs it, so hiding them in the
    metadata alone would show every answer after Run All: solutions keep theirs behind a
    button (`answers.hidden_answer`)."""
    notebook = text_notebook(path)
    exercises = tagged(notebook, "exercise")
    solutions = tagged(notebook, "solution")
    assert len(exercises) >= 2 and len(solutions) >= len(exercises)
    for cell in solutions:
        assert cell.cell_type == "code"
        assert cell.metadata["jupyter"]["source_hidden"] is True
        assert cell.metadata["jupyter"]["outputs_hidden"] is True
        assert cell.source.startswith("with hidden_answer():\n"), cell.source[:60]
    first_exercise = notebook.cells.index(exercises[0])
    assert all(notebook.cells.index(cell) > first_exercise for cell in solutions)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_no_paths_of_this_machine(path: Path) -> None:
    for text in (path.read_text(), ipynb_path(path).read_text()):
        assert str(ROOT) not in text and str(Path.home()) not in text


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


def run_notebook(path: Path, jupyter_path: str, monkeypatch: pytest.MonkeyPatch) -> float:
    """Execute the notebook's text form top to bottom with QUICK=1; seconds taken."""
    monkeypatch.setenv("JUPYTER_PATH", jupyter_path)
    monkeypatch.setenv("QUICK", "1")
    notebook = text_notebook(path)
    client = SlicedPollClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name=KERNEL_NAME,
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    started = time.monotonic()
    client.execute()
    elapsed = time.monotonic() - started
    figures = sum(
        "image/png" in output.get("data", {})
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert figures >= 2, f"{path.stem} drew {figures} figures"
    return elapsed


NEEDS_CLUSTER = [
    pytest.mark.system,
    pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed"),
]


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=NEEDS_CLUSTER if p.stem in LIVE else []) for p in NOTEBOOKS],
    ids=ids(NOTEBOOKS),
)
def test_runs_top_to_bottom_quickly(
    path: Path,
    kernel_on_this_python: str,
    monkeypatch: pytest.MonkeyPatch,
    record_property: Callable[[str, object], None],
) -> None:
    elapsed = run_notebook(path, kernel_on_this_python, monkeypatch)
    record_property("seconds_with_quick", round(elapsed, 1))

"""The build records an interactive's steps in the notebook's own kernel: at each step of
each control, what the function printed and drew for that value, the others at their
starting values (an error as the line a reader would see); a control it cannot step
through is named as such."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest

from book.build import execute
from book.control_pages import STEPS_KEY

pytestmark = pytest.mark.notebooks

CONTROLS = """import ipywidgets as widgets
from matplotlib import pyplot as plt


def draw(replicas, think_s, kind, name):
    if think_s > 50:
        raise ValueError("think time beyond the horizon")
    print(f"{replicas} replicas, think {think_s:.1f} s, {kind}, {name}")
    plt.bar([0, 1], [replicas, think_s])
    plt.show()


widgets.interactive(
    draw,
    replicas=widgets.IntSlider(value=4, min=1, max=16, description="replicas"),
    think_s=widgets.FloatLogSlider(value=10, base=10, min=0, max=2, readout_format=".1f"),
    kind=widgets.Dropdown(options=["sticky", "mrtr"], value="mrtr"),
    name=widgets.Text(value="lab", description="name"),
)
"""


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The record of the one interactive of a small notebook the build ran."""
    path = tmp_path_factory.mktemp("notebook") / "01_controls.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(CONTROLS)]
    nbformat.write(notebook, path)
    run = execute(path)
    assert len(run.cells) == 1, "the recording cell stayed in the notebook"
    [record] = run.metadata[STEPS_KEY].values()
    return dict(record)


def printed(outputs: list[dict[str, Any]]) -> str:
    return "".join(output["text"] for output in outputs if output["output_type"] == "stream")


def test_each_step_shows_what_the_function_printed_and_drew_for_that_value(
    steps: dict[str, Any],
) -> None:
    controls = {control["name"]: control for control in steps["controls"]}
    assert set(controls) == {"replicas", "think_s", "kind"}
    replicas = controls["replicas"]
    assert replicas["labels"][0] == "1" and replicas["labels"][-1] == "16"
    assert "4" in replicas["labels"] and 4 <= len(replicas["labels"]) <= 6
    for label, outputs in zip(replicas["labels"], replicas["outputs"], strict=True):
        assert printed(outputs) == f"{label} replicas, think 10.0 s, mrtr, lab\n"
        assert any("image/png" in output.get("data", {}) for output in outputs)
    think = controls["think_s"]
    assert think["labels"][0] == "1.0" and think["labels"][-1] == "100.0"
    for label, outputs in zip(think["labels"][:-1], think["outputs"][:-1], strict=True):
        assert printed(outputs) == f"4 replicas, think {label} s, mrtr, lab\n"
    assert think["outputs"][-1] == [
        {
            "output_type": "stream",
            "name": "stderr",
            "text": "ValueError: think time beyond the horizon\n",
        }
    ]
    assert controls["kind"]["labels"] == ["sticky", "mrtr"]
    assert printed(controls["kind"]["outputs"][0]) == "4 replicas, think 10.0 s, sticky, lab\n"


def test_each_control_starts_at_the_notebooks_value(steps: dict[str, Any]) -> None:
    for control in steps["controls"]:
        assert control["outputs"][control["start"]] == steps["start"]
    assert printed(steps["start"]) == "4 replicas, think 10.0 s, mrtr, lab\n"


def test_a_control_without_steps_is_named_as_unrecorded(steps: dict[str, Any]) -> None:
    assert steps["unrecorded"] == ["name"]

"""An interactive's recorded steps as the page's own controls: one range input per control
over its steps, every step's result in the page with only the starting one shown, and a
note on the controls the build could not record; without a record, the widgets stay under
a note that they run in JupyterLab."""

from __future__ import annotations

import re
from typing import Any

import nbformat

from book.control_pages import (
    RUNS_IN_JUPYTERLAB,
    STEPS_KEY,
    WIDGET_VIEW,
    control_page,
    show_controls,
)
from book.pages import visible_text

INTERACTIVE = "a" * 32
SLIDER = "b" * 32


def printed(text: str) -> list[dict[str, Any]]:
    return [{"output_type": "stream", "name": "stdout", "text": text}]


def record() -> dict[str, Any]:
    return {
        "start": printed("4 replicas"),
        "controls": [
            {
                "name": "replicas",
                "description": "replicas",
                "labels": ["1", "4", "16"],
                "start": 1,
                "outputs": [printed("1 replica"), printed("4 replicas"), printed("16 replicas")],
            },
            {
                "name": "kind",
                "description": "kind",
                "labels": ["sticky", "mrtr"],
                "start": 0,
                "outputs": [
                    printed("4 replicas"),
                    [
                        {
                            "output_type": "display_data",
                            "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
                        }
                    ],
                ],
            },
        ],
        "unrecorded": ["name"],
    }


def notebook_with_interactive(steps: dict[str, Any] | None) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    view = {WIDGET_VIEW: {"model_id": INTERACTIVE, "version_major": 2, "version_minor": 0}}
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "interactive(draw, ...)", outputs=[nbformat.v4.new_output("display_data", data=view)]
        )
    ]
    if steps is not None:
        notebook.metadata[STEPS_KEY] = {INTERACTIVE: steps}
    return notebook


def models() -> dict[str, Any]:
    return {
        INTERACTIVE: {
            "model_name": "VBoxModel",
            "state": {"_dom_classes": ["widget-interact"], "children": [f"IPY_MODEL_{SLIDER}"]},
        },
        SLIDER: {"model_name": "IntSliderModel", "state": {"value": 4}},
    }


def test_each_control_is_a_range_over_its_steps_starting_where_the_notebook_did() -> None:
    page = control_page(record())
    inputs = re.findall(r"<input [^>]*>", page)
    assert len(inputs) == 2
    assert (
        'max="2"' in inputs[0] and 'value="1"' in inputs[0] and 'data-name="replicas"' in inputs[0]
    )
    assert 'max="1"' in inputs[1] and 'value="0"' in inputs[1]
    assert "<output>4</output>" in page and "<output>sticky</output>" in page


def test_every_step_is_in_the_page_and_only_the_start_shown() -> None:
    page = control_page(record())
    results = re.findall(r'<div class="control-steps-result" data-step="([^"]+)"( hidden)?>', page)
    assert results == [
        ("start", ""),
        ("replicas=0", " hidden"),
        ("replicas=2", " hidden"),
        ("kind=1", " hidden"),
    ]
    text = visible_text(page)
    assert "1 replica" in text and "16 replicas" in text
    assert '<img src="data:image/png;base64,iVBORw0KGgo="' in page
    assert "<Figure>" not in text


def test_the_note_says_what_moves_and_what_runs_in_jupyterlab_only() -> None:
    text = visible_text(control_page(record()))
    assert "2 to 3 steps" in text and "one control at a time" in text
    assert "runs in JupyterLab only: name" in text


def test_a_recorded_interactive_becomes_the_pages_controls_and_its_steps_leave_the_notebook() -> (
    None
):
    notebook = notebook_with_interactive(record())
    show_controls(notebook, models())
    [output] = notebook.cells[0].outputs
    assert WIDGET_VIEW not in output["data"]
    assert 'class="control-steps"' in output["data"]["text/html"]
    assert STEPS_KEY not in notebook.metadata


def test_an_unrecorded_interactive_keeps_its_widgets_under_a_note_that_it_runs_in_jupyterlab() -> (
    None
):
    notebook = notebook_with_interactive(None)
    show_controls(notebook, models())
    note, widget = notebook.cells[0].outputs
    assert RUNS_IN_JUPYTERLAB in note["data"]["text/html"]
    assert widget["data"][WIDGET_VIEW]["model_id"] == INTERACTIVE


def test_a_widget_that_is_no_interactive_is_left_alone() -> None:
    notebook = notebook_with_interactive(None)
    notebook.cells[0].outputs[0]["data"][WIDGET_VIEW]["model_id"] = SLIDER
    show_controls(notebook, models())
    assert len(notebook.cells[0].outputs) == 1

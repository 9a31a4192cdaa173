"""The book's two editions of one executed notebook: the student's without a trace of the
answers, the teacher's with each answer (code, explanation, output) in the cell itself."""

from __future__ import annotations

import json

import nbformat
import pytest

from book.editions import (
    WIDGET_STATE,
    WIDGET_VIEW,
    Edition,
    edition,
    readable,
    solution_texts,
    widget_models,
)
from lessons.answers import SHOW
from lessons.execution import SlicedPollClient

pytestmark = pytest.mark.notebooks

LESSON = "print('the lesson shows this line to everyone')"
SLIDER = "import ipywidgets\ndisplay(ipywidgets.IntSlider(value=3, description='replicas'))"
SOLUTION = """with hidden_answer(\"\"\"The store answers in **0.2 ms**, so nobody waits.\"\"\"):
    print('forty-two calls were asked again, none lost')
    display(ipywidgets.IntSlider(value=7, description='answer-only slider'))"""


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    """A small notebook in the lesson's shape, run for real with its widgets' state kept."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [
        nbformat.v4.new_code_cell("from lessons.answers import hidden_answer\n" + LESSON),
        nbformat.v4.new_code_cell(SLIDER),
        nbformat.v4.new_markdown_cell("**Exercise 1.** How many calls were asked again?"),
        nbformat.v4.new_code_cell(SOLUTION, metadata={"tags": ["solution"]}),
    ]
    folder = tmp_path_factory.mktemp("notebook")
    SlicedPollClient(
        notebook,
        timeout=120,
        store_widget_state=True,
        resources={"metadata": {"path": str(folder)}},
    ).execute()
    return notebook


def shown_models(notebook: nbformat.NotebookNode) -> list[str]:
    return [
        output["data"][WIDGET_VIEW]["model_id"]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if WIDGET_VIEW in output.get("data", {})
    ]


def saved_state(notebook: nbformat.NotebookNode) -> str:
    return json.dumps(notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {}))


def test_the_student_edition_leaves_out_the_solution_and_every_widget_of_its_answer(
    executed: nbformat.NotebookNode,
) -> None:
    student = edition(executed, Edition.STUDENT, SHOW)
    assert [cell.source for cell in student.cells] == [cell.source for cell in executed.cells[:3]]
    # The lesson's own slider keeps its state, so the page can draw it.
    models = widget_models(student)
    assert [models[m]["model_name"] for m in shown_models(student)] == ["IntSliderModel"]
    state = saved_state(student)
    for answer_only in ("forty-two", "0.2 ms", "answer-only slider", SHOW):
        assert answer_only not in state
    assert "replicas" in state
    # The executed notebook itself is left as it was.
    assert "forty-two" in saved_state(executed)


def test_the_teachers_edition_puts_the_answer_in_the_cell_behind_the_pages_button(
    executed: nbformat.NotebookNode,
) -> None:
    teacher = edition(executed, Edition.TEACHER, SHOW)
    solution = teacher.cells[3]
    assert "hide-cell" in solution.metadata["tags"]
    assert solution.metadata["mystnb"]["code_prompt_show"] == SHOW
    kinds = [
        "stream" if output["output_type"] == "stream" else sorted(output["data"])[0]
        for output in solution.outputs
    ]
    # The explanation as HTML, the printed line, the answer's own widget; no button.
    assert kinds == ["text/html", "stream", WIDGET_VIEW]
    assert "<strong>0.2 ms</strong>" in solution.outputs[0]["data"]["text/html"]
    assert "forty-two calls were asked again" in solution.outputs[1]["text"]
    models = widget_models(teacher)
    assert sorted(models[m]["model_name"] for m in shown_models(teacher)) == [
        "IntSliderModel",
        "IntSliderModel",
    ]
    assert "ButtonModel" not in {model["model_name"] for model in models.values()}


def test_the_answers_text_is_what_only_the_solution_holds(
    executed: nbformat.NotebookNode,
) -> None:
    texts = solution_texts(executed)
    assert readable("forty-two calls were asked again, none lost") in texts
    assert readable("The store answers in 0.2 ms, so nobody waits.") in texts
    # A line the lesson shares with the answer is no sign of the answer.
    assert all(readable("the lesson shows this line") not in text for text in texts)
    # The teacher's edition holds the same text; the student's holds none of it.
    teacher_texts = solution_texts(edition(executed, Edition.TEACHER, SHOW))
    assert set(texts) <= set(teacher_texts)
    assert solution_texts(edition(executed, Edition.STUDENT, SHOW)) == []


def test_text_is_compared_without_markup() -> None:
    assert readable("**MRTR** asks [nobody](docs/x.md) again") == readable("MRTR asks nobody again")
    assert readable("`held_calls`: 0") == "heldcalls0"

"""Each edition says where its answers are in its own words, in the place of the paragraph
with which every notebook tells a JupyterLab reader (behind a button under each exercise)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from book.build import NOTEBOOKS_DIR
from book.editions import (
    JUPYTERLAB_ANSWERS_NOTE,
    Edition,
    answers_note,
    edition,
    is_solution,
    readable,
)
from lessons.answers import HIDE, SHOW

NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))


def markdown(notebook: nbformat.NotebookNode) -> str:
    return "\n\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_each_notebook_with_answers_tells_a_jupyterlab_reader_where_they_are(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    if not any(is_solution(cell) for cell in notebook.cells):
        pytest.skip("no exercise answers")
    notes = JUPYTERLAB_ANSWERS_NOTE.findall(markdown(notebook))
    assert len(notes) == 1 and SHOW in notes[0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_the_student_edition_names_no_button_and_the_teachers_its_own(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    student = readable(markdown(edition(notebook, Edition.STUDENT, SHOW)))
    teacher = markdown(edition(notebook, Edition.TEACHER, SHOW))
    assert readable(SHOW) not in student and readable(HIDE) not in student
    assert "button" not in student
    if any(is_solution(cell) for cell in notebook.cells):
        assert readable(answers_note(Edition.STUDENT, SHOW)) in student
        assert teacher.count(answers_note(Edition.TEACHER, SHOW)) == 1

"""The teachers' copies of the graded notebooks, made from the notebooks' sources without
nbgrader: every solution becomes the student's cell, every graded exercise gets its checks,
and the solutions still set what the graded exercises ask for."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import nbformat
import pytest

from assignments.graded import GRADED, GradedExercise
from assignments.master import (
    ASSIGNMENT_INTRO,
    EXERCISES_HEADING,
    exercise_number,
    master_notebook,
)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@functools.cache
def master(name: str) -> nbformat.NotebookNode:
    return master_notebook(NOTEBOOKS / f"{name}.py", GRADED[name])


def grading(cell: nbformat.NotebookNode) -> dict[str, object]:
    return dict(cell.metadata.get("nbgrader", {}))


def assigned_names(source: str) -> set[str]:
    """The names a cell's code binds (assignments, `for`, `with ... as`, imports)."""
    tree = ast.parse(source)
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    stored = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    return stored & names


@pytest.mark.parametrize("name", sorted(GRADED))
def test_every_solution_becomes_the_students_cell_and_every_graded_exercise_is_checked(
    name: str,
) -> None:
    cells = master(name).cells
    answers = [cell for cell in cells if grading(cell).get("solution")]
    exercises = [
        n for cell in cells if cell.cell_type == "markdown" if (n := exercise_number(cell))
    ]
    assert len(answers) == len(exercises) > 0
    for answer in answers:
        assert answer.source.startswith("### BEGIN SOLUTION\n")
        assert answer.source.endswith("\n### END SOLUTION")
    checks = {grading(cell)["grade_id"]: cell for cell in cells if grading(cell).get("grade")}
    assert set(checks) == {exercise.grade_id for exercise in GRADED[name]}
    for exercise in GRADED[name]:
        check = checks[exercise.grade_id]
        public, hidden = check.source.split("### BEGIN HIDDEN TESTS\n")
        assert exercise.public_check.strip() in public
        assert hidden.strip() == f"{exercise.hidden_tests.strip()}\n### END HIDDEN TESTS"
        assert grading(check)["points"] == exercise.points and grading(check)["locked"]


@pytest.mark.parametrize("name", sorted(GRADED))
def test_the_solutions_set_what_the_graded_exercises_ask_for(name: str) -> None:
    cells = master(name).cells
    by_id = {grading(cell)["grade_id"]: cell for cell in cells if grading(cell)}
    for exercise in GRADED[name]:
        solution = by_id[f"answer_{exercise.number}"].source
        missing = set(exercise.answers) - assigned_names(solution)
        assert missing == set(), (name, exercise.number, missing)


@pytest.mark.parametrize("name", sorted(GRADED))
def test_a_handed_out_copy_is_not_paired_and_says_how_it_is_graded(name: str) -> None:
    notebook = master(name)
    assert "jupytext" not in notebook.metadata
    intro = [cell for cell in notebook.cells if EXERCISES_HEADING in cell.source]
    assert len(intro) == 1 and intro[0].source.endswith(ASSIGNMENT_INTRO)
    assert "Show answer" not in intro[0].source
    for exercise in GRADED[name]:
        text = next(
            cell.source
            for cell in notebook.cells
            if cell.cell_type == "markdown" and exercise_number(cell) == exercise.number
        )
        assert "**For grading**" in text
        assert all(f"`{answer}`" in text for answer in exercise.answers)


def test_a_graded_exercise_the_notebook_does_not_have_is_refused() -> None:
    name = sorted(GRADED)[0]
    missing = GradedExercise(
        number=99, points=1, answers={"x": "nothing"}, public_check="", hidden_tests=""
    )
    with pytest.raises(ValueError, match="99"):
        master_notebook(NOTEBOOKS / f"{name}.py", (*GRADED[name], missing))

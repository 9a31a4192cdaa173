"""A graded notebook's master copy, in nbgrader's form, made from the lab's notebook source.

The lesson's cells are kept as they are. Each exercise's solution cell becomes the cell the
student writes in: nbgrader's solution markers around the whole of it, so the released copy
holds an empty cell where the teacher's copy holds the solution, its explanation included.
A graded exercise's text says which values the answer must set, and a locked test cell
follows its answer: the public check above nbgrader's hidden-test markers, the hidden tests
below them, which the released copy leaves out.
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import nbformat

from assignments.graded import GradedExercise

SOLUTION_TAG = "solution"
EXERCISE_TAG = "exercise"
#: An exercise's first words in the notebooks: "**Exercise 2.**".
EXERCISE_NUMBER = re.compile(r"\*\*Exercise (\d+)\.\*\*")
#: nbgrader's version of the cell metadata it reads.
NBGRADER_SCHEMA = 3
EXERCISES_HEADING = "## Exercises"
#: The heading of a notebook's exercises, on a line of its own in a Markdown cell.
EXERCISES = re.compile(rf"^{EXERCISES_HEADING}$", re.M)
ASSIGNMENT_INTRO = f"""{EXERCISES_HEADING}

Write your answer in the empty code cell under each exercise, then run the cell after it:
it checks that your answer sets the values the exercise names, not that they are right.
Your teacher grades the graded exercises (marked **For grading**) with hidden tests as well.
Run the whole notebook (Run All) before you hand it in: the tests read the lesson's results."""


def _nbgrader(grade_id: str, *, solution: bool, grade: bool, points: int = 0) -> dict[str, object]:
    metadata: dict[str, object] = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": not solution,
        "schema_version": NBGRADER_SCHEMA,
        "solution": solution,
        "task": False,
    }
    if grade:
        metadata["points"] = points
    return metadata


def exercise_number(cell: nbformat.NotebookNode) -> int | None:
    """The number of the exercise a Markdown cell states, if it is one."""
    if EXERCISE_TAG not in cell.metadata.get("tags", []):
        return None
    found = EXERCISE_NUMBER.search(cell.source)
    if found is None:
        raise ValueError(f"an exercise cell without its number: {cell.source[:60]!r}")
    return int(found[1])


def grading_note(exercise: GradedExercise) -> str:
    """What a graded exercise's text adds: the values the answer sets, and its points."""
    names = "\n".join(f"- `{name}`: {what}" for name, what in exercise.answers.items())
    points = "point" if exercise.points == 1 else "points"
    return f"\n\n**For grading** ({exercise.points} {points}), your code sets:\n\n{names}"


def answer_cell(solution: nbformat.NotebookNode, number: int) -> nbformat.NotebookNode:
    """The cell the student writes exercise `number`'s answer in (the solution, in the
    teacher's copy)."""
    body = solution.source.rstrip("\n")
    cell = nbformat.v4.new_code_cell(f"### BEGIN SOLUTION\n{body}\n### END SOLUTION")
    cell.metadata["nbgrader"] = _nbgrader(f"answer_{number}", solution=True, grade=False)
    return cell


def checks_cell(exercise: GradedExercise) -> nbformat.NotebookNode:
    """A graded exercise's checks: the public one the student runs, then the hidden tests."""
    source = "\n".join(
        [
            f"# Checks of exercise {exercise.number}: run this cell after your answer.",
            exercise.public_check.strip(),
            "### BEGIN HIDDEN TESTS",
            exercise.hidden_tests.strip(),
            "### END HIDDEN TESTS",
        ]
    )
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = _nbgrader(
        exercise.grade_id, solution=False, grade=True, points=exercise.points
    )
    return cell


def master_notebook(source: Path, graded: tuple[GradedExercise, ...]) -> nbformat.NotebookNode:
    """The teacher's copy of the notebook whose jupytext source is `source`, with the
    `graded` exercises' checks (see the module's text)."""
    notebook = jupytext.read(source)
    by_number = {exercise.number: exercise for exercise in graded}
    cells: list[nbformat.NotebookNode] = []
    number: int | None = None
    answered: set[int] = set()
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and (heading := EXERCISES.search(cell.source)):
            # What the lesson says of its answers' buttons gives way to how the copy is graded.
            cell.source = cell.source[: heading.start()] + ASSIGNMENT_INTRO
        elif cell.cell_type == "markdown" and (found := exercise_number(cell)) is not None:
            number = found
            if number in by_number:
                cell.source += grading_note(by_number[number])
        elif cell.cell_type == "code" and SOLUTION_TAG in cell.metadata.get("tags", []):
            if number is None or number in answered:
                raise ValueError(f"{source.name}: a solution under no exercise of its own")
            answered.add(number)
            cells.append(answer_cell(cell, number))
            if number in by_number:
                cells.append(checks_cell(by_number[number]))
            continue
        cells.append(cell)
    missing = sorted(set(by_number) - answered)
    if missing:
        raise ValueError(f"{source.name}: no solution for the graded exercises {missing}")
    notebook.cells = cells
    # A copy handed out is a notebook on its own: paired with a text twin, JupyterLab would
    # write one beside it, over the lab's own if it sits in the lab's folder.
    notebook.metadata.pop("jupytext", None)
    return notebook

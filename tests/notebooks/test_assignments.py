"""The graded exercises end to end, in the light install as a teacher without root has it:
`make assignments` writes the student notebooks and the autograder from the notebooks' own
sources, the student notebooks hold no answer and no hidden test, and grading a right and
a wrong submission gives them different scores."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from assignments.course import submission_path
from assignments.graded import GRADED

ROOT = Path(__file__).resolve().parents[2]
LIGHT_VENV = ROOT / ".tools" / "light-venv"
LIGHT_PYTHON = LIGHT_VENV / "bin" / "python"
#: The notebook graded end to end: the quickest of those with more than one graded exercise.
GRADED_END_TO_END = "03_rolling_upgrade"
#: What a wrong answer to its first exercise sets: the default drain, and the sticky run it
#: had; the public check passes, the hidden tests do not.
WRONG_ANSWER = 'drain_s = DRAIN_TIMEOUT_S\npatient = runs["sticky"]'
#: A grade line of `python -m assignments grade`.
GRADE_LINE = re.compile(r"^(\S+)\s+(\S+): ([\d.]+) / ([\d.]+)$", re.M)

pytestmark = [pytest.mark.notebooks, pytest.mark.slow]


def teaching_installed() -> bool:
    if not LIGHT_PYTHON.exists():
        return False
    found = subprocess.run(
        [str(LIGHT_PYTHON), "-c", "import nbgrader"], capture_output=True, timeout=60
    )
    return found.returncode == 0


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course folder made by `make assignments` (the light install is not remade)."""
    if not teaching_installed():
        pytest.skip("the light install with the teaching group is missing: run make setup")
    root = tmp_path_factory.mktemp("course")
    made = subprocess.run(
        ["make", "-o", ".tools/light-venv/.installed", "assignments", f"ASSIGNMENTS_OUT={root}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    return root


def cells_of(path: Path) -> list[nbformat.NotebookNode]:
    return list(nbformat.read(path, as_version=4).cells)


def test_every_graded_notebook_has_a_student_notebook_and_a_teachers_copy(course: Path) -> None:
    for name in GRADED:
        assert (course / "release" / name / f"{name}.ipynb").exists(), name
        assert (course / "source" / name / f"{name}.ipynb").exists(), name
    assert (course / "gradebook.db").exists()


def test_the_student_notebooks_hold_the_checks_and_no_answer(course: Path) -> None:
    for name, graded in GRADED.items():
        student = "\n".join(
            cell.source for cell in cells_of(course / "release" / name / f"{name}.ipynb")
        )
        teacher = "\n".join(
            cell.source for cell in cells_of(course / "source" / name / f"{name}.ipynb")
        )
        assert "hidden_answer(" not in student, name
        assert "hidden_answer(" in teacher, name
        for exercise in graded:
            assert exercise.public_check.strip() in student, (name, exercise.number)
            assert exercise.hidden_tests.strip() not in student, (name, exercise.number)
            assert exercise.hidden_tests.strip() in teacher, (name, exercise.number)
            for answer in exercise.answers:
                assert f"`{answer}`" in student, (name, answer)


def submit(course: Path, student: str, notebook: nbformat.NotebookNode) -> None:
    path = submission_path(course, student, GRADED_END_TO_END)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def test_a_right_and_a_wrong_submission_get_different_grades(course: Path) -> None:
    name = GRADED_END_TO_END
    master = course / "source" / name / f"{name}.ipynb"
    submit(course, "right", nbformat.read(master, as_version=4))
    # The wrong one answers the first exercise wrongly and the others as the solution does.
    wrong = nbformat.read(master, as_version=4)
    first_answer = next(
        cell for cell in wrong.cells if cell.metadata.get("nbgrader", {}).get("solution")
    )
    first_answer.source = WRONG_ANSWER
    submit(course, "wrong", wrong)
    graded = subprocess.run(
        # The course folder as a teacher names it, relative to the lab's folder.
        [
            str(LIGHT_PYTHON),
            "-m",
            "assignments",
            "grade",
            "--out",
            os.path.relpath(course, ROOT),
            name,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "QUICK": "1"},
    )
    assert graded.returncode == 0, graded.stdout + graded.stderr
    scores = {
        student: (float(score), float(most))
        for assignment, student, score, most in GRADE_LINE.findall(graded.stdout)
        if assignment == name
    }
    exercises = GRADED[name]
    assert exercises[0].number == 1, "the wrong answer is the first exercise's"
    most = sum(exercise.points for exercise in exercises)
    assert scores == {
        "right": (most, most),
        "wrong": (most - exercises[0].points, most),
    }, graded.stdout

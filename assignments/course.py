"""The course folder nbgrader works in: the teacher's copies, the student notebooks it
releases, the students' notebooks handed back, and their grades.

    source/NN_name/NN_name.ipynb                the teacher's copy (`make assignments`)
    source/NN_name/recorded/                    its recorded live runs, handed out with it
    release/NN_name/NN_name.ipynb               the student's notebook, to hand out
    submitted/STUDENT/NN_name/NN_name.ipynb     what a student handed back
    autograded/STUDENT/NN_name/NN_name.ipynb    the same, run and graded
    gradebook.db, nbgrader_config.py            the autograder: the hidden tests and scores

nbgrader runs as a module of the Python running this one, so in whatever environment it
is installed (the `teaching` group), with no service and no administrator rights.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from assignments.graded import GRADED
from assignments.master import master_notebook

#: The lab's notebooks, from the lab's folder (an install of the package does not carry them).
NOTEBOOKS = Path("notebooks")
#: The course's settings for nbgrader: the student's empty cell, and a bound on one cell's
#: run when grading (the lessons' simulations take seconds, not nbgrader's default 30 s).
CONFIG = """\
c = get_config()  # noqa: F821
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}
c.Execute.timeout = %d
"""
CELL_TIMEOUT_S = 600


@dataclass(frozen=True)
class Grade:
    """A student's score on one assignment, as the gradebook holds it."""

    student: str
    assignment: str
    score: float
    max_score: float


def environment() -> dict[str, str]:
    """This environment with its Python's scripts first on the PATH, as an activated venv
    has them: nbgrader runs its database's migrations (`alembic`) by name."""
    scripts = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": os.pathsep.join([scripts, os.environ.get("PATH", "")])}


def nbgrader(root: Path, *args: str, timeout_s: float = 1800) -> str:
    """Run one nbgrader command in the course folder; its output, or an error with it."""
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=environment(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def copy_recordings(name: str, folder: Path, notebooks: Path = NOTEBOOKS) -> None:
    """Put the notebook's recorded live runs in `recorded/` beside it: nbgrader hands out
    and grades with the files of the assignment's folder, and a notebook reads its
    recordings from `recorded/` in the folder it runs in (`lessons.recordings`)."""
    recordings = sorted((notebooks / "recorded").glob(f"{name}.*.json"))
    shutil.rmtree(folder / "recorded", ignore_errors=True)
    if recordings:
        (folder / "recorded").mkdir()
        for recording in recordings:
            shutil.copy2(recording, folder / "recorded" / recording.name)


def make_assignments(
    root: Path, names: list[str] | None = None, notebooks: Path = NOTEBOOKS
) -> list[Path]:
    """Write each graded notebook's teacher's copy into `root`'s source folder, from its
    twin in `notebooks`, and release its student notebook; the released notebooks' paths."""
    notebooks = notebooks.resolve()
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(CONFIG % CELL_TIMEOUT_S)
    names = names or sorted(GRADED)
    for name in names:
        if name not in GRADED:
            raise ValueError(f"{name} has no graded exercises; graded: {sorted(GRADED)}")
        folder = root / "source" / name
        folder.mkdir(parents=True, exist_ok=True)
        master = master_notebook(notebooks / f"{name}.py", GRADED[name])
        nbformat.write(master, folder / f"{name}.ipynb")
        copy_recordings(name, folder, notebooks)
    # One run for every assignment of the folder: nbgrader takes seconds to start.
    nbgrader(root, "generate_assignment", "*", "--force")
    return [root / "release" / name / f"{name}.ipynb" for name in names]


def submission_path(root: Path, student: str, name: str) -> Path:
    """Where a student's notebook for assignment `name` goes to be graded."""
    return root / "submitted" / student / name / f"{name}.ipynb"


def grade(root: Path, name: str) -> list[Grade]:
    """Run and grade every submission of assignment `name`; every grade of the course."""
    nbgrader(root, "autograde", name, "--force")
    return grades(root)


def grades(root: Path) -> list[Grade]:
    """Every score in the gradebook, by student and assignment."""
    table = root.resolve() / "grades.csv"
    nbgrader(root, "export", "--to", str(table))
    with table.open(newline="") as rows:
        return [
            Grade(
                row["student_id"], row["assignment"], float(row["score"]), float(row["max_score"])
            )
            for row in csv.DictReader(rows)
        ]

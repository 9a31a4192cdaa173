"""`python -m assignments [NOTEBOOK ...]`: the graded notebooks' assignments (`make
assignments`); `python -m assignments grade [NOTEBOOK ...]`: the students' notebooks handed
back, run and graded."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from assignments.course import NOTEBOOKS, grade, make_assignments
from assignments.graded import GRADED

GRADE = "grade"


def parser(grading: bool) -> argparse.ArgumentParser:
    """The options of making the assignments, or of grading them."""
    made = argparse.ArgumentParser(
        prog=f"python -m assignments{' ' + GRADE if grading else ''}", description=__doc__
    )
    made.add_argument(
        "--out", type=Path, default=Path("build/assignments"), help="the course folder"
    )
    if not grading:
        made.add_argument(
            "--notebooks-dir",
            type=Path,
            default=NOTEBOOKS,
            help="the lab's notebooks, whose twins the assignments are made from",
        )
    made.add_argument(
        "notebooks",
        nargs="*",
        metavar="NOTEBOOK",
        help=f"the notebooks (default: all graded, {', '.join(sorted(GRADED))})",
    )
    return made


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    grading = argv[:1] == [GRADE]
    options = parser(grading)
    args = options.parse_args(argv[1:] if grading else argv)
    names = args.notebooks or sorted(GRADED)
    if unknown := sorted(set(names) - set(GRADED)):
        options.error(f"no graded exercises in {', '.join(unknown)}")
    if not grading:
        for released in make_assignments(args.out, names, args.notebooks_dir):
            print("student notebook:", released)
        print("teacher's copies and autograder:", args.out / "source", args.out / "gradebook.db")
        return
    for name in names:
        for result in grade(args.out, name):
            if result.assignment == name:
                print(f"{name}  {result.student}: {result.score:g} / {result.max_score:g}")


if __name__ == "__main__":
    main()

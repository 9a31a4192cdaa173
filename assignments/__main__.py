"""`python -m assignments`: the graded notebooks' assignments (`make assignments`), and
`python -m assignments grade`: the students' notebooks handed back, graded."""

from __future__ import annotations

import argparse
from pathlib import Path

from assignments.course import grade, make_assignments
from assignments.graded import GRADED


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m assignments", description=__doc__)
    parser.add_argument("action", nargs="?", choices=("make", "grade"), default="make")
    parser.add_argument(
        "--out", type=Path, default=Path("build/assignments"), help="the course folder"
    )
    parser.add_argument(
        "notebooks", nargs="*", help=f"the notebooks (default: all graded, {sorted(GRADED)})"
    )
    args = parser.parse_intermixed_args(argv)
    names = args.notebooks or sorted(GRADED)
    if args.action == "make":
        for released in make_assignments(args.out, names):
            print("student notebook:", released)
        print("teacher's copies and autograder:", args.out / "source", args.out / "gradebook.db")
        return
    for name in names:
        for result in grade(args.out, name):
            if result.assignment == name:
                print(f"{name}  {result.student}: {result.score:g} / {result.max_score:g}")


if __name__ == "__main__":
    main()

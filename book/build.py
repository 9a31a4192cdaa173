"""`make book`: the notebooks and the docs as one static site, in two editions.

    python -m book [--out build/book] [--executed DIR] [notebooks/NN_name.ipynb ...]

Each notebook is executed once, in quick mode (QUICK=1), with its widgets' state saved and
its interactive controls' steps recorded in the same kernel (`book.control_steps`), or
read from `--executed DIR` where it was already run so (by JupyterLab, or by
`lessons.execution`; the tests build the book from the notebooks they ran: their controls
then say on the page that they run in JupyterLab); the diagrams of
every page are drawn once; then the student edition (`OUT/student/`) and the teacher's
(`OUT/teacher/`) are written from the same results and built by Sphinx side by side, and
each is zipped to hand out (`OUT/mrtr-lab-book-student.zip`, `book.handouts`). The
build fails if a notebook fails, if a page would load anything from another host, or if the
student edition shows any answer's text. The seconds each step took are printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat

from book.control_pages import STEPS_KEY
from book.control_steps import RECORDING, STEPS_MIME
from book.diagrams import DiagramError, has_diagram, mermaid_renderer
from book.editions import Edition, readable, solution_texts
from book.handouts import write_handout
from book.pages import remote_loads, visible_text
from book.sources import (
    README,
    BookContent,
    MarkdownStep,
    SourceError,
    docs_pages,
    page_text,
    write_sources,
)
from lessons.answers import SHOW
from lessons.execution import SlicedPollClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"

#: A bound on one cell in quick mode: its slowest cell takes seconds.
CELL_TIMEOUT_S = 300
#: The teacher's guide, in both editions: it names JupyterLab's buttons and the teacher's
#: edition's, for the teacher.
TEACHERS_GUIDE = "docs/classroom.html"


class BookError(RuntimeError):
    """The book could not be built, or what was built breaks one of its promises."""


@dataclass
class Stopwatch:
    """The seconds each step of the build took, printed as it goes."""

    steps: dict[str, float]

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        print(f"book: {name} ...", flush=True)
        yield
        self.steps[name] = time.monotonic() - started
        print(f"book: {name}: {self.steps[name]:.0f} s", flush=True)


@contextmanager
def quick_mode() -> Iterator[None]:
    """QUICK=1 for the kernels started meanwhile (they inherit this process's environment)."""
    before = os.environ.get("QUICK")
    os.environ["QUICK"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["QUICK"]
        else:
            os.environ["QUICK"] = before


def execute(path: Path) -> nbformat.NotebookNode:
    """A notebook run top to bottom in a fresh kernel, in its own folder, widget state kept,
    then its interactive controls' steps recorded in the same kernel (`book.control_steps`),
    kept in the notebook's metadata."""
    notebook = nbformat.read(path, as_version=4)
    recording = nbformat.v4.new_code_cell(RECORDING)
    notebook.cells.append(recording)
    client = SlicedPollClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute()
    except Exception as error:
        raise BookError(f"{path.name} failed to run:\n{error}") from error
    notebook.cells.remove(recording)
    recorded = [out for out in recording.outputs if STEPS_MIME in out.get("data", {})]
    steps = recorded[0]["data"][STEPS_MIME] if recorded else {}
    if steps:
        notebook.metadata[STEPS_KEY] = steps
        timing = recording.metadata.get("execution", {})
        if {"iopub.execute_input", "shell.execute_reply"} <= timing.keys():
            took = datetime.fromisoformat(timing["shell.execute_reply"]) - datetime.fromisoformat(
                timing["iopub.execute_input"]
            )
            print(f"book: {path.name}: controls' steps recorded in {took.total_seconds():.0f} s")
    return notebook


def _unchanged(markdown: str) -> str:
    return markdown


def already_executed(path: Path, folder: Path) -> nbformat.NotebookNode:
    """The notebook of `path`'s name in `folder`, as a run in quick mode left it."""
    run = folder / path.name
    if not run.is_file():
        raise BookError(f"{path.name} has no executed copy in {folder}")
    notebook = nbformat.read(run, as_version=4)
    if not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"):
        raise BookError(f"{run} shows no output: it was not executed")
    return notebook


def prepare(
    notebooks: list[Path], watch: Stopwatch, executed_dir: Path | None = None
) -> BookContent:
    """Everything both editions share: the notebooks executed in quick mode (or read from
    `executed_dir`, where they were), the pages, every diagram drawn."""
    executed = {}
    with quick_mode():
        for path in notebooks:
            if executed_dir is not None:
                executed[path.name] = already_executed(path, executed_dir)
                continue
            with watch.step(f"run {path.name}"):
                executed[path.name] = execute(path)
    pages = [README, *docs_pages()]
    markdown_cells = [
        cell
        for notebook in executed.values()
        for cell in notebook.cells
        if cell.cell_type == "markdown"
    ]
    sources = [page.read_text(encoding="utf-8") for page in pages]
    with watch.step("draw the diagrams"), ExitStack() as stack:
        step: MarkdownStep = _unchanged
        if any(has_diagram(text) for text in [*sources, *(c.source for c in markdown_cells)]):
            step = stack.enter_context(mermaid_renderer()).markdown
            for cell in markdown_cells:
                cell.source = step(cell.source)
        drawn = {page: page_text(page, step) for page in pages}
    return BookContent(
        readme=drawn[README],
        docs={page.name: drawn[page] for page in pages[1:]},
        notebooks=executed,
        answer_label=SHOW,
    )


def sphinx(content: BookContent, out_dir: Path, watch: Stopwatch) -> None:
    """Write both editions' sources and build them with Sphinx, side by side."""
    runs = {}
    with watch.step("build both editions with Sphinx"):
        for which in Edition:
            source = out_dir / "src" / which.value
            write_sources(which, content, source)
            tags = ["-t", "teacher"] if which is Edition.TEACHER else []
            command = [
                sys.executable,
                "-m",
                "sphinx",
                "-b",
                "html",
                "-q",
                "-E",
                *tags,
                "-d",
                str(out_dir / "doctrees" / which.value),
                str(source),
                str(out_dir / which.value),
            ]
            runs[which] = subprocess.Popen(command, cwd=ROOT)
        failed = [which.value for which, run in runs.items() if run.wait() != 0]
    if failed:
        raise BookError(f"Sphinx failed to build the {' and '.join(failed)} edition")


def pages_naming_buttons(site: Path, labels: list[str]) -> list[str]:
    """The pages of a built edition (the teacher's guide aside) whose text names one of
    the answers' buttons by its label."""
    named = [readable(label) for label in labels]
    return [
        str(path.relative_to(site))
        for path in sorted(site.rglob("*.html"))
        if path.relative_to(site).as_posix() != TEACHERS_GUIDE
        and any(
            label in readable(visible_text(path.read_text(encoding="utf-8"))) for label in named
        )
    ]


def check(content: BookContent, out_dir: Path) -> None:
    """What the book promises: nothing loaded from another host, no answer in the
    student edition (and every answer in the teacher's, or the search proves nothing),
    and no page of the student edition speaking of an answer's button it does not have."""
    labels = [content.answer_label, content.answer_label.replace("Show", "Hide", 1)]
    named = pages_naming_buttons(out_dir / Edition.STUDENT.value, labels)
    if named:
        raise BookError(f"the student edition speaks of a button it lacks: {named[:5]}")
    loads = [load for which in Edition for load in remote_loads(out_dir / which.value)]
    if loads:
        listed = "\n".join(f"  {load.page}: <{load.element}> {load.address}" for load in loads)
        raise BookError(f"pages load from other hosts:\n{listed}")
    for name, notebook in content.notebooks.items():
        page = f"notebooks/{Path(name).stem}.html"
        texts = solution_texts(notebook)
        for which, leaks in ((Edition.STUDENT, True), (Edition.TEACHER, False)):
            html = (out_dir / which.value / page).read_text(encoding="utf-8")
            shown = readable(visible_text(html))
            found = [text for text in texts if (text in shown) == leaks]
            if found:
                what = "shows answers" if leaks else "misses answers"
                raise BookError(f"the {which.value} edition of {page} {what}: {found[:3]}")


def build(
    notebooks: list[Path], out_dir: Path, executed_dir: Path | None = None
) -> dict[str, float]:
    """Build both editions into `out_dir` (from the runs in `executed_dir`, if given); the
    seconds each step took."""
    watch = Stopwatch({})
    started = time.monotonic()
    content = prepare(notebooks, watch, executed_dir)
    sphinx(content, out_dir, watch)
    with watch.step("check the editions"):
        check(content, out_dir)
    with watch.step("zip each edition"):
        zips = [write_handout(out_dir / which.value, which, out_dir) for which in Edition]
    watch.steps["total"] = time.monotonic() - started
    print(
        f"book: built in {watch.steps['total']:.0f} s: {out_dir / 'student'}/index.html and "
        f"{out_dir / 'teacher'}/index.html, to hand out as {zips[0].name} and {zips[1].name}",
        flush=True,
    )
    return watch.steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m book",
        description="Build the book (student and teacher's editions) from the notebooks "
        "and the docs.",
    )
    parser.add_argument(
        "notebooks",
        nargs="*",
        type=Path,
        help="notebooks to put in the book (default: every notebooks/NN_name.ipynb)",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "build" / "book", help="folder for both editions"
    )
    parser.add_argument(
        "--executed",
        type=Path,
        default=None,
        metavar="DIR",
        help="a folder of the same notebooks already executed with QUICK=1 and their "
        "widgets' state saved: the book is built from them instead of running each again",
    )
    args = parser.parse_args(argv)
    if args.executed is not None and not args.executed.is_dir():
        parser.error(f"--executed: not a folder: {args.executed}")
    notebooks = args.notebooks or sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
    missing = [str(p) for p in notebooks if p.suffix != ".ipynb" or not p.is_file()]
    if missing:
        parser.error(f"not a notebook file: {', '.join(missing)}")
    try:
        executed = args.executed.resolve() if args.executed is not None else None
        build([p.resolve() for p in notebooks], args.out.resolve(), executed)
    except (BookError, DiagramError, SourceError) as error:
        print(f"book: {error}", file=sys.stderr)
        return 1
    return 0

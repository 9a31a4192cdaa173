"""One edition's Sphinx source folder: the README as the front page, the notebooks in their
edition, the docs pages, and the files every page loads.

The layout mirrors the repository (`index.md` for the README, `notebooks/`, `docs/`), so
the links between the README, the docs and the notebooks work as they do on a code host.
A link to anything else in the repository (a module, the Makefile) has no page in the
book: it keeps its text and loses its target.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from book.diagrams import BOOK_TOOLS_DIR
from book.editions import Edition, edition

ROOT = Path(__file__).resolve().parents[1]
BOOK_DIR = ROOT / "book"
DOCS_DIR = ROOT / "docs"
README = ROOT / "README.md"
#: The widgets' renderer and the fonts it loads beside itself.
WIDGETS_DIST = BOOK_TOOLS_DIR / "html-manager" / "dist"
WIDGET_FILES = ("embed.js", "*.woff", "*.woff2", "*.ttf", "*.eot", "*.svg")
#: A Markdown link or image: `[text](target)` or `![alt](target)`.
LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
BANNER = {
    Edition.STUDENT: (
        "This is the **student edition**: each notebook ends with exercises, and their "
        "answers are left out. Run the notebooks yourself to try them."
    ),
    Edition.TEACHER: (
        "This is the **teacher's edition**: each exercise's answer (its code, what it "
        "shows and why) is folded behind the button under the exercise."
    ),
}

#: What a Markdown text becomes before it is written: diagrams drawn, for one.
MarkdownStep = Callable[[str], str]


class SourceError(RuntimeError):
    """The book cannot be put together: a file it needs is missing."""


def book_path(repo_path: Path) -> Path | None:
    """Where a repository file lives in the book, or None if it has no page there."""
    relative = repo_path.resolve().relative_to(ROOT) if repo_path.is_absolute() else repo_path
    parts = relative.parts
    if relative == Path("README.md"):
        return Path("index.md")
    if parts[:1] == ("docs",) and (relative.suffix == ".md" or parts[1:2] == ("img",)):
        return relative
    if parts[:1] == ("notebooks",) and relative.suffix == ".ipynb":
        return relative
    return None


def relink(markdown: str, source: Path) -> str:
    """Links as they work in the book: to the page a repository file has there, or to
    nothing (text alone) when it has none. Fenced code is left as written."""
    here = (source.parent).resolve()

    def link(match: re.Match[str]) -> str:
        target = match["target"]
        if re.match(r"[a-z][a-z0-9+.-]*:|#", target, re.I):
            return match[0]
        path, _, anchor = target.partition("#")
        resolved = (here / path).resolve()
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            return match[0] if match["bang"] else match["text"]
        in_book = book_path(resolved)
        if in_book is None:
            return match["text"]
        own = book_path(source)
        assert own is not None
        relative = Path(*[".."] * (len(own.parts) - 1), in_book).as_posix()
        return f"{match['bang']}[{match['text']}]({relative}{'#' + anchor if anchor else ''})"

    lines, fenced = [], False
    for line in markdown.splitlines(keepends=True):
        if FENCE.match(line):
            fenced = not fenced
        lines.append(line if fenced or FENCE.match(line) else LINK.sub(link, line))
    return "".join(lines)


def docs_pages() -> list[Path]:
    """The docs pages the book carries, the teacher's page first."""
    pages = sorted(DOCS_DIR.glob("*.md"))
    return sorted(pages, key=lambda page: page.name != "classroom.md")


@dataclass(frozen=True)
class BookContent:
    """What both editions are made of, prepared once: the README and the docs pages with
    their links fixed and diagrams drawn, the notebooks executed with theirs drawn."""

    readme: str
    docs: dict[str, str]
    notebooks: dict[str, nbformat.NotebookNode]
    answer_label: str


def page_text(page: Path, step: MarkdownStep) -> str:
    """A Markdown page of the repository as the book shows it."""
    return step(relink(page.read_text(encoding="utf-8"), page))


def _toctree(caption: str, entries: Iterable[str]) -> str:
    lines = "\n".join(entries)
    return f"\n```{{toctree}}\n:hidden:\n:caption: {caption}\n:maxdepth: 1\n\n{lines}\n```\n"


def front_page(which: Edition, content: BookContent) -> str:
    """The README with the edition's banner under its title, and the book's contents."""
    title, _, rest = content.readme.partition("\n")
    notebooks = [f"notebooks/{Path(name).stem}" for name in content.notebooks]
    contents = _toctree("Notebooks", notebooks)
    contents += _toctree("Reference", [f"docs/{Path(name).stem}" for name in content.docs])
    return f"{title}\n\n```{{note}}\n{BANNER[which]}\n```\n{rest}\n{contents}"


def _copy_widget_renderer(static: Path) -> None:
    if not (WIDGETS_DIST / "embed.js").is_file():
        raise SourceError(
            f"{WIDGETS_DIST / 'embed.js'} is missing: `make setup` installs it with npm"
        )
    target = static / "widgets"
    target.mkdir(parents=True, exist_ok=True)
    for pattern in WIDGET_FILES:
        for path in WIDGETS_DIST.glob(pattern):
            shutil.copy2(path, target / path.name)


def write_sources(which: Edition, content: BookContent, out_dir: Path) -> None:
    """Write one edition's source folder: conf.py, the front page, the notebooks in the
    edition, the docs pages and the static files."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "notebooks").mkdir(parents=True)
    (out_dir / "docs").mkdir()
    shutil.copy2(BOOK_DIR / "conf.py", out_dir / "conf.py")
    static = out_dir / "_static"
    static.mkdir()
    shutil.copy2(BOOK_DIR / "book.css", static / "book.css")
    shutil.copy2(BOOK_DIR / "controls.js", static / "controls.js")
    _copy_widget_renderer(static)
    (out_dir / "index.md").write_text(front_page(which, content), encoding="utf-8")
    for name, notebook in content.notebooks.items():
        shown = edition(notebook, which, content.answer_label)
        nbformat.write(shown, out_dir / "notebooks" / name)
    for name, text in content.docs.items():
        (out_dir / "docs" / name).write_text(text, encoding="utf-8")
    if (DOCS_DIR / "img").is_dir():
        shutil.copytree(DOCS_DIR / "img", out_dir / "docs" / "img")

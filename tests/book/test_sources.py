"""An edition's sources: links between the README, the docs and the notebooks keep working
in the book, links to the rest of the repository keep their text, fenced code is left as
written, and the front page says which edition it is."""

from __future__ import annotations

from pathlib import Path

import nbformat

from book.editions import Edition
from book.sources import ROOT, BookContent, book_path, front_page, relink

DOCS_PAGE = ROOT / "docs" / "architecture.md"


def test_repository_files_with_a_page_keep_it() -> None:
    assert book_path(ROOT / "README.md") == Path("index.md")
    assert book_path(DOCS_PAGE) == Path("docs/architecture.md")
    assert book_path(ROOT / "notebooks" / "01_mrtr_protocol.ipynb") == Path(
        "notebooks/01_mrtr_protocol.ipynb"
    )
    assert book_path(ROOT / "notebooks" / "01_mrtr_protocol.py") is None
    assert book_path(ROOT / "server" / "app.py") is None


def test_links_lead_to_pages_of_the_book_or_lose_their_target() -> None:
    text = (
        "See [the notebook](../notebooks/01_mrtr_protocol.ipynb), "
        "[the front page](../README.md#what-the-lab-finds), [the app](../server/app.py), "
        "[a section](#layout), [the spec](https://example.org/spec) and "
        "[a missing page](nowhere.md).\n"
    )
    assert relink(text, DOCS_PAGE) == (
        "See [the notebook](../notebooks/01_mrtr_protocol.ipynb), "
        "[the front page](../index.md#what-the-lab-finds), the app, "
        "[a section](#layout), [the spec](https://example.org/spec) and "
        "a missing page.\n"
    )


def test_links_from_the_front_page_are_relative_to_the_books_root() -> None:
    text = "[Architecture](docs/architecture.md) and [the Makefile](Makefile)\n"
    assert (
        relink(text, ROOT / "README.md")
        == "[Architecture](docs/architecture.md) and the Makefile\n"
    )


def test_fenced_code_is_left_as_written() -> None:
    text = "```python\nx = [a](../server/app.py)\n```\n[the app](../server/app.py)\n"
    assert relink(text, DOCS_PAGE) == "```python\nx = [a](../server/app.py)\n```\nthe app\n"


def test_the_front_page_names_its_edition_and_lists_every_page() -> None:
    content = BookContent(
        readme="# MRTR Lab\n\nThe lab.\n",
        docs={"classroom.md": "# Teaching\n", "server.md": "# Server\n"},
        notebooks={"01_mrtr_protocol.ipynb": nbformat.v4.new_notebook()},
        answer_label="Show answer",
    )
    student = front_page(Edition.STUDENT, content)
    teacher = front_page(Edition.TEACHER, content)
    assert student.startswith("# MRTR Lab\n") and teacher.startswith("# MRTR Lab\n")
    assert "student edition" in student and "answers are left out" in student
    assert "teacher's edition" in teacher
    for entry in ("notebooks/01_mrtr_protocol", "docs/classroom", "docs/server"):
        assert f"\n{entry}\n" in student

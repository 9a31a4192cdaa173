"""The build's own checks: it refuses a student page that shows an answer, a teacher's page
that misses one, and any page that loads from another host; and what is not a notebook."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from book.build import (
    TEACHERS_GUIDE,
    BookError,
    already_executed,
    check,
    main,
    pages_naming_buttons,
)
from book.sources import BookContent

ANSWER = "print('forty-two calls were asked again, none lost')"


def content() -> BookContent:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("**Exercise 1.** How many calls were asked again?"),
        nbformat.v4.new_code_cell(ANSWER, metadata={"tags": ["solution"]}),
    ]
    return BookContent(
        readme="# MRTR Lab\n", docs={}, notebooks={"01_x.ipynb": notebook}, answer_label="Show"
    )


def site(out: Path, student: str, teacher: str) -> Path:
    for edition, body in (("student", student), ("teacher", teacher)):
        page = out / edition / "notebooks" / "01_x.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<html><body><p>Exercise 1.</p>{body}</body></html>")
    return out


def test_a_book_whose_editions_keep_their_promises_passes(tmp_path: Path) -> None:
    check(content(), site(tmp_path, "", f"<pre>{ANSWER}</pre>"))


def test_a_student_page_that_shows_an_answer_fails_the_build(tmp_path: Path) -> None:
    out = site(tmp_path, f"<pre><span>print</span>({ANSWER[6:]}</pre>", f"<pre>{ANSWER}</pre>")
    with pytest.raises(BookError, match=r"student edition .* shows answers"):
        check(content(), out)


def test_a_teachers_page_that_misses_an_answer_fails_the_build(tmp_path: Path) -> None:
    with pytest.raises(BookError, match=r"teacher edition .* misses answers"):
        check(content(), site(tmp_path, "", ""))


def test_a_student_page_that_speaks_of_the_answer_button_fails_the_build(tmp_path: Path) -> None:
    out = site(tmp_path, "<p>Each answer is behind a Show button.</p>", f"<pre>{ANSWER}</pre>")
    with pytest.raises(BookError, match=r"student edition speaks of a button .*01_x\.html"):
        check(content(), out)


def test_the_teachers_guide_may_name_the_buttons_in_the_student_edition(tmp_path: Path) -> None:
    out = site(tmp_path, "", f"<pre>{ANSWER}</pre>")
    guide = out / "student" / TEACHERS_GUIDE
    guide.parent.mkdir(parents=True)
    guide.write_text("<p>The teacher's edition has a Show button under each exercise.</p>")
    assert pages_naming_buttons(out / "student", ["Show"]) == []
    check(content(), out)


def test_a_page_that_loads_from_another_host_fails_the_build(tmp_path: Path) -> None:
    remote = '<script src="https://cdn.example.org/require.min.js"></script>'
    with pytest.raises(BookError, match=r"cdn\.example\.org"):
        check(content(), site(tmp_path, remote, f"<pre>{ANSWER}</pre>"))


def test_the_command_refuses_what_is_not_a_notebook(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--out", str(tmp_path), str(tmp_path / "missing.ipynb")])
    assert exited.value.code == 2


def test_an_executed_copy_is_read_and_a_missing_or_unrun_one_refused(tmp_path: Path) -> None:
    source = tmp_path / "01_x.ipynb"
    ran, unrun = tmp_path / "ran", tmp_path / "unrun"
    for folder, outputs in ((ran, [nbformat.v4.new_output("stream", text="hello\n")]), (unrun, [])):
        folder.mkdir()
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell("print('hello')", outputs=outputs)]
        nbformat.write(notebook, folder / source.name)
    assert already_executed(source, ran).cells[0].outputs[0]["text"] == "hello\n"
    with pytest.raises(BookError, match="not executed"):
        already_executed(source, unrun)
    with pytest.raises(BookError, match="no executed copy"):
        already_executed(source, tmp_path)


def test_the_command_refuses_an_executed_folder_that_is_not_one(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--out", str(tmp_path), "--executed", str(tmp_path / "missing")])
    assert exited.value.code == 2


def test_a_missing_chromium_is_said_in_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = tmp_path / "ran"
    ran.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("```mermaid\nsequenceDiagram\n    A->>B: hello\n```"),
        nbformat.v4.new_code_cell(
            "print(1)", outputs=[nbformat.v4.new_output("stream", text="1\n")]
        ),
    ]
    source = tmp_path / "01_x.ipynb"
    nbformat.write(notebook, source)
    nbformat.write(notebook, ran / source.name)
    monkeypatch.setenv("MRTR_CHROMIUM", str(tmp_path / "no-chromium"))
    code = main(["--out", str(tmp_path / "out"), "--executed", str(ran), str(source)])
    assert code == 1
    assert "chromium" in capsys.readouterr().err.lower()

"""An exercise's answer: hidden behind a button whose label fits, its explanation written in
Markdown shown beside what the solution printed, and its errors still failing the cell."""

from __future__ import annotations

import pytest

from lessons import answers


def test_the_explanation_is_markdown_rendered_beside_the_output() -> None:
    _, area, output = answers.answer_area("A **late** checkpoint wastes `more`.")
    text, beside = area.children
    assert "<strong>late</strong>" in text.value and "<code>more</code>" in text.value
    assert beside is output
    assert area.layout.flex_flow == "row wrap"


def test_the_button_opens_and_closes_the_answer_and_says_which() -> None:
    button, area, _ = answers.answer_area("Why.")
    assert area.layout.display == "none" and button.description == answers.SHOW
    button.click()
    assert area.layout.display == "flex" and button.description == answers.HIDE
    button.click()
    assert area.layout.display == "none" and button.description == answers.SHOW


def test_the_button_is_as_wide_as_its_label() -> None:
    """A fixed width cut the label to "Show the ans..."."""
    button, _, _ = answers.answer_area("Why.")
    assert button.layout.width == "auto"


def test_a_solution_that_fails_fails_its_cell() -> None:
    with pytest.raises(ZeroDivisionError), answers.hidden_answer("Why."):
        raise ZeroDivisionError("the solution broke")


def test_an_answer_without_an_explanation_is_refused() -> None:
    with pytest.raises(ValueError, match="explanation"), answers.hidden_answer("  "):
        pass

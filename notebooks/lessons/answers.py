"""Exercise answers that stay hidden until the reader asks for them, and explain themselves.

A solution cell (tagged `solution`) is one `with hidden_answer(explanation):` block. Its
code is folded (`source_hidden`), but JupyterLab shows a cell's outputs again whenever it
runs it, so Run All would print every answer under its exercise. Code run inside
`hidden_answer()` still runs with the rest of the notebook (a broken solution fails the
run like any other cell), but what it prints, shows or draws is kept, with the
explanation written in Markdown beside it, in an area that a "Show answer" button opens.
A notebook's claims (`claims.claim`) made inside the block are checked like any other.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

import ipywidgets as widgets
from IPython.display import display
from markdown_it import MarkdownIt
from matplotlib import pyplot as plt

SHOW = "Show answer"
HIDE = "Hide answer"


def explanation_html(markdown: str) -> str:
    """An explanation written in Markdown (CommonMark, with tables), as HTML."""
    return MarkdownIt("commonmark").enable("table").render(textwrap.dedent(markdown).strip())


def answer_area(explanation: str) -> tuple[widgets.Button, widgets.Box, widgets.Output]:
    """The button, the hidden area it opens (the explanation beside the output) and the
    output the solution's code writes into."""
    output = widgets.Output(layout=widgets.Layout(flex="2 1 28em", min_width="0"))
    text = widgets.HTML(
        explanation_html(explanation), layout=widgets.Layout(flex="1 1 20em", min_width="0")
    )
    area = widgets.Box(
        [text, output],
        layout=widgets.Layout(display="none", flex_flow="row wrap", grid_gap="0 1.5em"),
    )
    # Sized to its label: a fixed width cuts it ("Show the ans...").
    button = widgets.Button(
        description=SHOW,
        icon="eye",
        tooltip="The answer: what the solution finds, and why",
        layout=widgets.Layout(width="auto"),
    )

    def toggle(_: widgets.Button) -> None:
        hidden = area.layout.display == "none"
        area.layout.display = "flex" if hidden else "none"
        button.description = HIDE if hidden else SHOW

    button.on_click(toggle)
    return button, area, output


@contextmanager
def hidden_answer(explanation: str) -> Iterator[widgets.Output]:
    """Capture the outputs of the `with` body into a hidden area behind a button, beside
    `explanation` (Markdown: why the answer is what it is).

    Figures the body draws are shown inside the area; a value to show must be passed to
    `display`, since the body's last line is not the cell's. Errors are raised, not kept.
    """
    if not explanation.strip():
        raise ValueError("an answer needs its explanation")
    button, area, output = answer_area(explanation)
    display(widgets.VBox([button, area]))
    failure: BaseException | None = None
    # Output swallows an exception raised in its `with` block (it prints it inside the
    # widget); catching it here first lets it fail the cell, and so a test, instead.
    with output:
        try:
            yield output
            plt.show()
        except BaseException as error:
            failure = error
    if failure is not None:
        raise failure

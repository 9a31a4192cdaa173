"""Exercise answers that stay hidden until the reader asks for them.

A solution cell's code is hidden (`source_hidden`), but JupyterLab shows a cell's outputs
again whenever it runs it, so Run All would print every answer under its exercise. Code run
inside `hidden_answer()` still runs with the rest of the notebook (a broken solution fails the
run like any other cell), but what it prints, shows or draws is kept in a collapsed output
that a "Show the answer" button opens.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import ipywidgets as widgets
from IPython.display import display
from matplotlib import pyplot as plt

SHOW = "Show the answer"
HIDE = "Hide the answer"


@contextmanager
def hidden_answer() -> Iterator[widgets.Output]:
    """Capture the outputs of the `with` body into a hidden area behind a button.

    Figures the body draws are shown inside the area; a value to show must be passed to
    `display`, since the body's last line is not the cell's. Errors are raised, not kept.
    """
    answer = widgets.Output(layout=widgets.Layout(display="none"))
    button = widgets.Button(description=SHOW, icon="eye", tooltip="The exercise's answer")

    def toggle(_: widgets.Button) -> None:
        hidden = answer.layout.display == "none"
        answer.layout.display = None if hidden else "none"
        button.description = HIDE if hidden else SHOW

    button.on_click(toggle)
    display(widgets.VBox([button, answer]))
    failure: BaseException | None = None
    # Output swallows an exception raised in its `with` block (it prints it inside the
    # widget); catching it here first lets it fail the cell, and so a test, instead.
    with answer:
        try:
            yield answer
            plt.show()
        except BaseException as error:
            failure = error
    if failure is not None:
        raise failure

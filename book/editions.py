"""The book's two editions of one executed notebook: the student's and the teacher's.

A notebook is executed once; each edition is a copy of the result. An exercise's solution
is every cell tagged `solution`. In JupyterLab a solution cell shows a button that opens
an output widget holding its answer (`notebooks/answers.py`), which needs a kernel; a
static page has none, so:

- the student edition leaves the solution cells out, with everything they drew or printed
  and the widgets that held it;
- the teacher's edition takes the answer out of its widget and puts it in the cell's
  outputs, and the page folds the cell's code and answer behind one button of its own
  (myst-nb's `hide-cell`, labelled as in JupyterLab).

Widgets other than the answers' keep their state, which the page embeds, but for an
`interactive` (sliders and the figure they drive), which the page shows as its own
controls over the steps the build recorded (`book.control_pages`); state no cell shows any
more is dropped, so nothing left out of a page remains in it.

Each notebook's exercises open with a paragraph that tells a JupyterLab reader where the
answers are (behind a button, under each exercise). Each edition says instead what it has:
the student's, exercises to do and no answers; the teacher's, its own button
(`answers_note`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Iterator
from enum import Enum
from typing import Any

import nbformat

from book.control_pages import show_controls
from book.pages import visible_text

SOLUTION_TAG = "solution"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: Widgets that only work with a kernel behind them: the answer's button is replaced by
#: the page's own.
KERNEL_ONLY_MODELS = {"ButtonModel"}
#: Widgets that only hold HTML (the answer's explanation): the page shows the HTML itself.
HTML_MODELS = {"HTMLModel", "HTMLMathModel"}
#: A widget model id as ipywidgets writes them.
MODEL_ID = re.compile(r"[0-9a-f]{32}")
#: The form of a rich output a page shows, first found first (myst-nb's order for HTML).
RENDER_PRIORITY = (
    WIDGET_VIEW,
    "application/javascript",
    "text/html",
    "image/svg+xml",
    "image/png",
    "image/gif",
    "image/jpeg",
    "text/markdown",
    "text/latex",
    "text/plain",
)
TEXT_FORMS = {"text/html", "text/markdown", "text/plain"}
#: The target of a Markdown link, `](...)`: a page shows its text alone.
LINK_TARGET = re.compile(r"\]\([^)]*\)")
#: The paragraph in which a notebook tells a JupyterLab reader where its answers are, up to
#: the blank line that ends it.
JUPYTERLAB_ANSWERS_NOTE = re.compile(
    r"^Each exercise has its answer under it\b.*?(?=\n\s*\n|\Z)", re.M | re.S
)


class Edition(Enum):
    """Who the book is for: students (no answers) or teachers (answers behind a button)."""

    STUDENT = "student"
    TEACHER = "teacher"


def answers_note(which: Edition, answer_label: str) -> str:
    """Where the edition's answers are, in the words of the paragraph that opens each
    notebook's exercises."""
    if which is Edition.STUDENT:
        return (
            "This edition has the exercises and leaves their answers out: try each one in "
            "the notebook, in JupyterLab, where its answer is under it for when you have "
            "done it. Your teacher has the answers too."
        )
    return (
        f"Each exercise has its answer under it, behind a **{answer_label}** button: the "
        "solution's code, what it shows and why, folded together. Students have the "
        "edition without answers: keep this one until the exercises are done."
    )


def is_solution(cell: nbformat.NotebookNode) -> bool:
    return SOLUTION_TAG in cell.metadata.get("tags", [])


def widget_models(notebook: nbformat.NotebookNode) -> dict[str, Any]:
    """The notebook's saved widget models by id (empty when it saved none)."""
    saved = notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {})
    return dict(saved.get("state", {}))


def _viewed_model(output: dict[str, Any]) -> str | None:
    view = output.get("data", {}).get(WIDGET_VIEW)
    return str(view["model_id"]) if view else None


def answer_outputs(
    outputs: Iterable[dict[str, Any]], models: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """What a reader sees once every widget around the outputs is opened: a box's
    children in order, an output widget's captured outputs, an HTML widget's HTML, a
    button nowhere."""
    for output in outputs:
        model_id = _viewed_model(output)
        model = models.get(model_id) if model_id else None
        if model is None:
            yield output
            continue
        state = model["state"]
        if model["model_name"] in KERNEL_ONLY_MODELS:
            continue
        if model["model_name"] in HTML_MODELS:
            yield {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/html": state["value"]},
            }
        elif model["model_name"] == "OutputModel":
            yield from answer_outputs(state.get("outputs", []), models)
        elif "children" in state:
            children = [
                {
                    "output_type": "display_data",
                    "metadata": {},
                    "data": {WIDGET_VIEW: {"model_id": child.removeprefix("IPY_MODEL_")}},
                }
                for child in state["children"]
            ]
            yield from answer_outputs(children, models)
        else:
            yield output


def _reachable(roots: Iterable[str], models: dict[str, Any]) -> set[str]:
    """The models the roots refer to, directly or through others (layouts, children,
    widgets shown inside an output widget)."""
    seen: set[str] = set()
    todo = [root for root in roots if root in models]
    while todo:
        model_id = todo.pop()
        if model_id in seen:
            continue
        seen.add(model_id)
        text = json.dumps(models[model_id]["state"])
        todo += [ref for ref in MODEL_ID.findall(text) if ref in models and ref not in seen]
    return seen


def _keep_shown_widgets(notebook: nbformat.NotebookNode, models: dict[str, Any]) -> None:
    shown = [
        model_id
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if (model_id := _viewed_model(output))
    ]
    kept = _reachable(shown, models)
    saved = notebook.metadata.get("widgets", {}).get(WIDGET_STATE)
    if saved is None:
        return
    if kept:
        saved["state"] = {model_id: models[model_id] for model_id in sorted(kept)}
    else:
        del notebook.metadata["widgets"]


def edition(
    notebook: nbformat.NotebookNode, which: Edition, answer_label: str
) -> nbformat.NotebookNode:
    """A copy of an executed notebook as the edition shows it (see the module's text)."""
    result = copy.deepcopy(notebook)
    models = widget_models(result)
    note = answers_note(which, answer_label)
    for cell in result.cells:
        if cell.cell_type == "markdown":
            cell.source = JUPYTERLAB_ANSWERS_NOTE.sub(lambda _: note, cell.source)
    if which is Edition.STUDENT:
        result.cells = [cell for cell in result.cells if not is_solution(cell)]
    else:
        for cell in result.cells:
            if not is_solution(cell):
                continue
            if cell.cell_type == "code":
                cell.outputs = [
                    nbformat.from_dict(output) for output in answer_outputs(cell.outputs, models)
                ]
                cell.metadata["tags"] = [*cell.metadata.get("tags", []), "hide-cell"]
                cell.metadata["mystnb"] = {
                    "code_prompt_show": answer_label,
                    "code_prompt_hide": answer_label.replace("Show", "Hide", 1),
                }
    show_controls(result, models)
    _keep_shown_widgets(result, models)
    return result


def readable(text: str) -> str:
    """Text as a search compares it: letters and digits only, lower case, Markdown link
    targets dropped, so a line matches its rendering whatever markup or highlighting
    came between."""
    return re.sub(r"[^0-9a-z]+", "", LINK_TARGET.sub("]", text).lower())


def _output_text(output: dict[str, Any]) -> str:
    """The text a page shows for an output: a stream's, or that of the one form of a
    rich output the page renders (a table's HTML rather than its plain text, none for a
    figure)."""
    if "text" in output:
        text = output["text"]
        return "".join(text) if isinstance(text, list) else str(text)
    data = output.get("data", {})
    shown = next((mime for mime in RENDER_PRIORITY if mime in data), None)
    if shown not in TEXT_FORMS:
        return ""
    text = "".join(data[shown]) if isinstance(data[shown], list) else str(data[shown])
    return visible_text(text) if shown == "text/html" else text


def solution_texts(notebook: nbformat.NotebookNode, min_chars: int = 16) -> list[str]:
    """What only the answers hold, as `readable` text: each line of a solution's code and
    of what it printed or showed (its answer widget's outputs included) that is at least
    `min_chars` long once readable and found nowhere else in the notebook (an answer may
    repeat a call or a heading)."""
    models = widget_models(notebook)
    answers: list[str] = []
    rest: list[str] = []
    for cell in notebook.cells:
        texts = answers if is_solution(cell) else rest
        texts.append(cell.source)
        if cell.cell_type == "code":
            texts += [_output_text(output) for output in answer_outputs(cell.outputs, models)]
    elsewhere = readable("\n".join(rest))
    lines = {readable(line) for text in answers for line in text.splitlines()}
    return sorted(line for line in lines if len(line) >= min_chars and line not in elsewhere)

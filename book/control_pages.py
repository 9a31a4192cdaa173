"""A notebook's interactive controls as a static page shows them: the page's own sliders,
which switch between the results recorded at build time, or a note that they run in
JupyterLab.

An `ipywidgets.interactive` (sliders and the figure they drive) saved in a notebook draws
its sliders in the page, but moving one there calls nothing: the figure stays at the
starting values. So a page shows instead, for each interactive whose steps the build
recorded (`book.control_steps`), one range input per control over its recorded steps,
with its readout, and every step's result, one shown at a time (`controls.js` switches
them; no kernel, nothing fetched). One control moves at a time: moving one puts the others
back where they started, since only each control's own steps were run. An interactive
with no recorded steps (a notebook built from a saved run) keeps its widgets, under a note
that says the sliders run in JupyterLab.
"""

from __future__ import annotations

import html
import json
from typing import Any

import nbformat

#: Where an executed notebook keeps its controls' recorded steps, by interactive's id.
STEPS_KEY = "control_steps"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The CSS class ipywidgets gives an `interactive`'s box.
INTERACT_CLASS = "widget-interact"
#: The forms of a recorded output a page shows, first found first.
SHOWN_FORMS = ("text/html", "image/svg+xml", "image/png", "image/jpeg", "text/plain")
#: What a control with no recorded steps says on itself.
RUNS_IN_JUPYTERLAB = (
    "These controls run in JupyterLab: this page was built from a saved run, so moving them "
    "here leaves the result below at their starting values. Open the notebook in "
    "JupyterLab to run it with yours."
)


def interactive_ids(models: dict[str, Any]) -> set[str]:
    """The saved widget models that are an `interactive` (controls and their output)."""
    return {
        model_id
        for model_id, model in models.items()
        if INTERACT_CLASS in model.get("state", {}).get("_dom_classes", [])
    }


def _html_output(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("display_data", data={"text/html": text})


def output_html(output: dict[str, Any]) -> str:
    """One recorded output as HTML: text as preformatted text, a figure as an image
    carried in the page."""
    if output.get("output_type") == "stream":
        return f"<pre>{html.escape(str(output.get('text', '')))}</pre>"
    data = output.get("data", {})
    form = next((form for form in SHOWN_FORMS if form in data), None)
    if form is None:
        return ""
    value = data[form]
    value = "".join(value) if isinstance(value, list) else str(value)
    if form in ("text/html", "image/svg+xml"):
        return value
    if form == "text/plain":
        return f"<pre>{html.escape(value)}</pre>"
    return f'<img src="data:{form};base64,{value.strip()}" alt="the result at this step">'


def _attribute_json(value: Any) -> str:
    return html.escape(json.dumps(value), quote=True)


def _result(step: str, outputs: list[dict[str, Any]], shown: bool) -> str:
    body = "".join(output_html(output) for output in outputs)
    hidden = "" if shown else " hidden"
    return f'<div class="control-steps-result" data-step="{html.escape(step)}"{hidden}>{body}</div>'


def _slider(control: dict[str, Any]) -> str:
    labels, start = control["labels"], control["start"]
    description = html.escape(control["description"])
    return (
        f'<label class="control-steps-slider"><span>{description}</span>'
        f'<input type="range" min="0" max="{len(labels) - 1}" step="1" value="{start}" '
        f'data-name="{html.escape(control["name"])}" data-start="{start}" '
        f'data-labels="{_attribute_json(labels)}" aria-label="{description}" '
        f'aria-valuetext="{html.escape(labels[start])}">'
        f"<output>{html.escape(labels[start])}</output></label>"
    )


def steps_note(record: dict[str, Any]) -> str:
    """What the page's controls are, said on them."""
    counts = sorted({len(control["labels"]) for control in record["controls"]}) or [0]
    steps = str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
    note = (
        f"Recorded when the book was built: each control moves over {steps} steps, one "
        "control at a time (moving one puts the others back where they started), and the "
        "result is what the notebook computed for those values. In JupyterLab every value "
        "and every combination runs."
    )
    if record["unrecorded"]:
        names = ", ".join(record["unrecorded"])
        note += f" Not recorded here, so it runs in JupyterLab only: {names}."
    return html.escape(note)


def control_page(record: dict[str, Any]) -> str:
    """An interactive's recorded steps as the page's own controls and results."""
    sliders = "".join(_slider(control) for control in record["controls"])
    results = [_result("start", record["start"], shown=True)]
    for control in record["controls"]:
        results += [
            _result(f"{control['name']}={index}", outputs, shown=False)
            for index, outputs in enumerate(control["outputs"])
            if index != control["start"]
        ]
    return (
        '<div class="control-steps">'
        f'<p class="control-steps-note">{steps_note(record)}</p>'
        f'<div class="control-steps-sliders">{sliders}</div>'
        f"{''.join(results)}</div>"
    )


def show_controls(notebook: nbformat.NotebookNode, models: dict[str, Any]) -> None:
    """Put each interactive of the notebook's outputs as the page shows it (see the
    module's text), and drop the recorded steps from the notebook."""
    records: dict[str, Any] = notebook.metadata.pop(STEPS_KEY, {})
    interactives = interactive_ids(models)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for output in cell.outputs:
            model_id = output.get("data", {}).get(WIDGET_VIEW, {}).get("model_id")
            if model_id in records:
                outputs.append(_html_output(control_page(records[model_id])))
                continue
            if model_id in interactives:
                outputs.append(
                    _html_output(f'<p class="control-steps-note">{RUNS_IN_JUPYTERLAB}</p>')
                )
            outputs.append(output)
        cell.outputs = outputs

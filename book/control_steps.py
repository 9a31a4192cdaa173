"""A notebook's interactive controls, recorded at a few steps each for a page without a
kernel.

In JupyterLab a control made by `ipywidgets.interactive` (a slider and the figure it
drives) calls its function again whenever it moves. A static page has no kernel to call,
so once a notebook has run, the build calls each such function again in the same kernel at
a few values of each control: `POINTS` steps across a slider's range (in its own steps,
evenly apart, on a log slider's exponent), every choice of a drop-down or a check box, and
the value it started at. One control moves at a time, the others stay at their starting
values (the steps of each control, not every combination of them: a few seconds per
step). What each call printed and drew is kept, as a notebook's outputs (an error it
raised as the line JupyterLab would show under the sliders).

`record_steps` runs in the kernel (the build sends its source there, with `RECORDING`):
it imports nothing of the book, only what the notebook's kernel has. It shows the record
as one output of `STEPS_MIME`, `{interactive's model id: record}`, where a record is

    {"start": outputs at the starting values,
     "controls": [{"name": argument, "description": label, "labels": [readout per step],
                   "start": index of the starting step, "outputs": [outputs per step]}],
     "unrecorded": [labels of the controls it cannot step through]}

and each step's outputs are `{"output_type": "stream", "text": ...}` or
`{"output_type": "display_data", "data": {mime: text}}` (images as base64).
"""

from __future__ import annotations

import inspect
from typing import Any

#: The steps across a slider's range, its ends included (the starting value is added).
POINTS = 5
#: The form in which the kernel shows the record.
STEPS_MIME = "application/vnd.mrtr.control-steps+json"


def record_steps(points: int, mime: str) -> None:
    """Call each live `interactive`'s function at the steps of each of its controls and
    show the record (see the module's text). Runs in the notebook's kernel."""
    import base64

    import ipywidgets as widgets
    from IPython.display import display
    from IPython.utils.capture import capture_output
    from matplotlib import pyplot as plt

    def readout(control: Any, value: Any) -> str:
        fmt = getattr(control, "readout_format", "")
        try:
            return format(value, fmt) if fmt else str(value)
        except (TypeError, ValueError):
            return str(value)

    def slider_values(control: Any) -> list[Any]:
        if isinstance(control, widgets.FloatLogSlider):
            low, high, step = control.min, control.max, control.step
            exponents = [low + (high - low) * i / (points - 1) for i in range(points)]
            snapped = [low + round((e - low) / step) * step for e in exponents]
            values = [float(f"{control.base**e:.12g}") for e in snapped]
        else:
            low, high, step = control.min, control.max, control.step
            spaced = [low + (high - low) * i / (points - 1) for i in range(points)]
            values = [min(high, low + round((v - low) / step) * step) for v in spaced]
            if isinstance(control, widgets.IntSlider):
                values = [int(v) for v in values]
            else:
                values = [float(f"{v:.12g}") for v in values]
        return sorted({*values, control.value})

    def steps(control: Any) -> list[tuple[str, Any]] | None:
        if isinstance(control, widgets.FloatLogSlider | widgets.IntSlider | widgets.FloatSlider):
            return [(readout(control, value), value) for value in slider_values(control)]
        if isinstance(control, widgets.Checkbox | widgets.ToggleButton):
            return [("off", False), ("on", True)]
        if hasattr(control, "_options_labels") and len(control._options_labels) <= 3 * points:
            return list(zip(control._options_labels, control._options_values, strict=True))
        return None

    def outputs_of(call: Any, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        failure = ""
        with capture_output(display=True) as captured:
            try:
                call(**arguments)
                plt.show()
            except Exception as error:  # the page shows what the reader would see
                failure = f"{type(error).__name__}: {error}\n"
        plt.close("all")
        shown: list[dict[str, Any]] = []
        if captured.stdout:
            shown.append({"output_type": "stream", "name": "stdout", "text": captured.stdout})
        if failure:
            shown.append({"output_type": "stream", "name": "stderr", "text": failure})
        for output in captured.outputs:
            data = {
                form: base64.b64encode(value).decode() if isinstance(value, bytes) else value
                for form, value in output.data.items()
            }
            shown.append({"output_type": "display_data", "metadata": {}, "data": data})
        return shown

    records: dict[str, Any] = {}
    for widget in list(widgets.widget._instances.values()):
        if not isinstance(widget, widgets.interactive) or widget.manual:
            continue
        start = dict(widget.kwargs)
        record: dict[str, Any] = {
            "start": outputs_of(widget.f, start),
            "controls": [],
            "unrecorded": [],
        }
        for control in widget.kwargs_widgets:
            name = getattr(control, "_kwarg", None)
            if name is None or name not in start:
                continue
            label = control.description or name
            choices = steps(control)
            if choices is None:
                record["unrecorded"].append(label)
                continue
            values = [value for _, value in choices]
            first = values.index(start[name]) if start[name] in values else 0
            record["controls"].append(
                {
                    "name": name,
                    "description": label,
                    "labels": [text for text, _ in choices],
                    "start": first,
                    "outputs": [
                        record["start"] if i == first else outputs_of(widget.f, start | {name: v})
                        for i, v in enumerate(values)
                    ],
                }
            )
        records[widget.model_id] = record
    display({mime: records}, raw=True)


#: The code a kernel runs to record its controls' steps.
RECORDING = "\n".join(
    [
        "from typing import Any",
        inspect.getsource(record_steps),
        f"record_steps({POINTS}, {STEPS_MIME!r})",
    ]
)

"""Every notebook, Run All in JupyterLab, on a student's machine: the light install alone
and no HAProxy, Redis or Node (`tests/browser/light_install.py` runs each once for the
session). No cell fails, every claim the prose makes holds, every figure is drawn, shows
data and passes the figure rules, every answer stays behind its button until a reader
presses it, the live parts show their recordings, said to be recordings, and the file
browser lists each notebook once (the jupytext twins hidden, as `make lab` does).

This one run per notebook checks what two runs checked before: nbclient's run on the
project's Python (claims, figure rules) and the run without HAProxy, Redis or Node
(recordings). The notebook tests still run with nbclient the live parts only the cluster
on this machine can run (`tests/notebooks/test_notebooks.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import wait_until
from tests.browser.jupyterlab import (
    HIDE,
    NOTEBOOK_OPEN_TIMEOUT_S,
    NOTEBOOKS_DIR,
    SHOW,
    listed_names,
)
from tests.browser.light_install import FEWEST_CLAIMS, LIGHT_VENV, LightRuns

NOTEBOOKS = sorted(path.name for path in NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
#: Notebooks whose live parts need HAProxy, Redis or Locust: on the light install they
#: show their recordings.
RECORDED_PARTS = ("06_live_swarm.ipynb", "07_persistent_tools.ipynb")


def test_the_file_browser_lists_each_notebook_once(
    light_runs: LightRuns, browser: WebDriver
) -> None:
    lab = light_runs.lab
    browser.get(lab.page(NOTEBOOKS[0]))
    wait_until(
        browser,
        lambda b: len([n for n in listed_names(b) if n.endswith(".ipynb")]) >= len(NOTEBOOKS),
        NOTEBOOK_OPEN_TIMEOUT_S,
        "the file browser did not list the notebooks",
    )
    names = listed_names(browser)
    for stem in sorted(p.stem for p in lab.root.glob("*.ipynb")):
        assert sum(name.startswith(stem) for name in names) == 1, (stem, names)
    lab.shut_down_kernels()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_run_all_on_the_light_install_errs_nowhere_and_hides_answers(
    name: str, light_runs: LightRuns
) -> None:
    run = light_runs.run(name)
    assert not run.errors, run.errors[0]
    # Every claim the prose makes was checked (a failed one stops the run with an error).
    assert run.printed.count("\N{CHECK MARK}") >= FEWEST_CLAIMS, run.printed[-2000:]
    # Every answer stays behind its button, and a reader who asks gets it.
    assert all(answer == SHOW for answer in run.answers), run.answers
    if run.answers:
        assert run.opened_answer is not None and run.opened_answer.startswith(HIDE)
        assert len(run.opened_answer.splitlines()) > 1
    kernel = next(record for record in run.census if "python" in record)
    assert Path(kernel["python"]).is_relative_to(LIGHT_VENV), kernel
    assert kernel["programs"] == {"haproxy": None, "redis-server": None, "node": None}
    assert kernel["load_test_packages"] == []


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_run_all_draws_every_figure_readable_and_none_empty(
    name: str, light_runs: LightRuns
) -> None:
    run = light_runs.run(name)
    assert not run.errors, f"the run stopped before its figures: {run.errors[0]}"
    assert run.figure_widths and all(width > 0 for width in run.figure_widths)
    assert [record for record in run.census if "census_error" in record] == []
    drawn = [record for record in run.census if "figure" in record]
    assert drawn, f"{name} drew no figure"
    assert [record for record in drawn if record["empty"]] == []
    assert len(run.figures) >= 2, f"{name} drew {len(run.figures)} figures"
    unreadable = {r["figure"]: r["problems"] for r in run.figures if r["problems"]}
    assert not unreadable, json.dumps(unreadable, indent=1)


@pytest.mark.parametrize("name", RECORDED_PARTS)
def test_live_parts_show_their_recording_without_haproxy_redis_or_node(
    name: str, light_runs: LightRuns
) -> None:
    run = light_runs.run(name)
    assert "RECORDED RUN, not live:" in run.printed
    assert "Recorded on " in run.printed
    assert "RECORD=1 python -m lessons.execution" in run.printed
    assert any("recorded " in record["figure"] for record in run.figures)

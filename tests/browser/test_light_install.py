"""Every notebook, Run All in JupyterLab, on a student's machine: the light install alone
and no HAProxy, Redis or Node. No cell fails, no figure is empty, every answer stays behind
its button until a reader presses it, and the file browser lists each notebook once (the
jupytext twins hidden, as `make lab` does).

The light install is `.tools/light-venv`, which `make setup` makes with
`pip install -e '.[notebooks]'` (editable, so it runs the working tree's code on exactly the
packages a student gets) and the test never installs. JupyterLab and its kernel run from
it with a PATH of symlinks to every program on this machine's PATH but haproxy,
redis-server and node (npm and npx with them). A kernel start-up file
(`figure_census.py`) records which Python the kernel is, what it can reach, and every
figure drawn with any plot in it that shows no data. The notebooks run with QUICK=1, one
after another in one JupyterLab, each kernel shut down after its notebook.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import wait_until
from tests.browser.jupyterlab import (
    ANSWER_TIMEOUT_S,
    HIDE,
    NOTEBOOK_OPEN_TIMEOUT_S,
    NOTEBOOKS_DIR,
    ROOT,
    SHOW,
    Lab,
    cells,
    errors_shown,
    figures_shown,
    kernel_idle,
    listed_names,
    prompt,
    run_all,
    running_lab,
    visible_output,
)

LIGHT_VENV = ROOT / ".tools" / "light-venv"
LIGHT_PYTHON = LIGHT_VENV / "bin" / "python"
NOTEBOOKS = sorted(path.name for path in NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
#: What a student's machine lacks: the cluster's programs and Node.
ABSENT_PROGRAMS = ("haproxy", "redis-server", "redis-cli", "node", "nodejs", "npm", "npx")
#: A bound on one notebook's Run All with QUICK=1 (the slowest takes about two minutes).
RUN_ALL_TIMEOUT_S = 480
CENSUS_SCRIPT = Path(__file__).with_name("figure_census.py")


@dataclass(frozen=True)
class LightLab:
    """JupyterLab running from the light install, and the file the kernels' figure census
    writes to."""

    lab: Lab
    census: Path

    def records(self) -> list[dict]:
        text = self.census.read_text() if self.census.exists() else ""
        return [json.loads(line) for line in text.splitlines()]


def path_without(programs: tuple[str, ...], folder: Path) -> str:
    """A PATH of one folder of symlinks to every program on this PATH but `programs` (and
    but this project's dev venv), the light install's bin first."""
    folder.mkdir(parents=True)
    dev_bin = (ROOT / ".venv" / "bin").resolve()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not Path(directory).is_dir() or Path(directory).resolve() == dev_bin:
            continue
        for program in Path(directory).iterdir():
            link = folder / program.name
            if program.name in programs or link.exists() or link.is_symlink():
                continue
            if program.is_file() and os.access(program, os.X_OK):
                link.symlink_to(program)
    return os.pathsep.join([str(LIGHT_VENV / "bin"), str(folder)])


def light_kernel(jupyter_path: Path) -> None:
    """The notebooks' kernel name, `python3`, bound to the light install's Python."""
    spec = jupyter_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [str(LIGHT_PYTHON), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "Python 3 (light install)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))


@pytest.fixture(scope="module")
def light_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LightLab]:
    if not (LIGHT_VENV / ".installed").exists():
        pytest.skip(f"{LIGHT_VENV} is missing: `make setup` makes the light install")
    tmp = tmp_path_factory.mktemp("light-lab")
    light_kernel(tmp / "jupyter")
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    shutil.copy(CENSUS_SCRIPT, startup / "00-figure-census.py")
    census = tmp / "census.jsonl"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("JUPYTER", "VIRTUAL_ENV", "PYTHON", "IPYTHON"))
    }
    env |= {
        "PATH": path_without(ABSENT_PROGRAMS, tmp / "bin"),
        "VIRTUAL_ENV": str(LIGHT_VENV),
        "QUICK": "1",
        "JUPYTER_PATH": str(tmp / "jupyter"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "IPYTHONDIR": str(tmp / "ipython"),
        "MRTR_FIGURE_CENSUS": str(census),
    }
    with running_lab(LIGHT_PYTHON, tmp, env) as lab:
        yield LightLab(lab=lab, census=census)


def test_the_file_browser_lists_each_notebook_once(light_lab: LightLab, browser: WebDriver) -> None:
    lab = light_lab.lab
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
def test_run_all_on_the_light_install_errs_nowhere_draws_no_empty_figure_and_hides_answers(
    name: str, light_lab: LightLab, browser: WebDriver
) -> None:
    lab = light_lab.lab
    notebook = nbformat.read(lab.root / name, as_version=4)
    solutions = {
        i for i, cell in enumerate(notebook.cells) if "solution" in cell.metadata.get("tags", [])
    }
    shown_code = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and i not in solutions
    ]
    light_lab.census.write_text("")
    browser.get(lab.page(name))
    try:
        wait_until(
            browser,
            lambda b: len(cells(b)) == len(notebook.cells) and kernel_idle(b),
            NOTEBOOK_OPEN_TIMEOUT_S,
            f"{name} did not open with its {len(notebook.cells)} cells and an idle kernel",
        )
        run_all(browser)

        def ran_or_failed(b: WebDriver) -> bool:
            """Every cell ran (numbered prompts, each answer's button drawn), or one
            failed and stopped the run; and the kernel is idle again."""
            shown = cells(b)
            ran = all(
                re.fullmatch(r"\[\d+\]:", prompt(shown[i]).strip()) for i in shown_code
            ) and all(visible_output(shown[i]) for i in solutions)
            return (ran or bool(errors_shown(b))) and kernel_idle(b)

        wait_until(browser, ran_or_failed, RUN_ALL_TIMEOUT_S, f"Run All of {name} did not end")
        errors = errors_shown(browser)
        assert not errors, errors[0]
        widths = figures_shown(browser)
        assert widths and all(width > 0 for width in widths), widths
        shown = cells(browser)
        # Every answer stays behind its button, and a reader who asks gets it.
        for i in solutions:
            assert visible_output(shown[i]) == SHOW, (i, visible_output(shown[i]))
        if solutions:
            first = min(solutions)
            shown[first].find_element(By.XPATH, f'.//button[normalize-space()="{SHOW}"]').click()
            wait_until(
                browser,
                lambda b: (
                    visible_output(cells(b)[first]).startswith(HIDE)
                    and len(visible_output(cells(b)[first]).splitlines()) > 1
                ),
                ANSWER_TIMEOUT_S,
                f"the button of {name}'s first exercise did not show its answer",
            )
    finally:
        lab.shut_down_kernels()

    records = light_lab.records()
    kernel = next(record for record in records if "python" in record)
    assert Path(kernel["python"]).is_relative_to(LIGHT_VENV), kernel
    assert kernel["programs"] == {"haproxy": None, "redis-server": None, "node": None}
    assert kernel["load_test_packages"] == []
    assert [record for record in records if "census_error" in record] == []
    figures = [record for record in records if "figure" in record]
    assert figures, f"{name} drew no figure"
    empty = [record for record in figures if record["empty"]]
    assert not empty, empty

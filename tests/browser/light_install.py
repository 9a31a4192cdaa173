"""The notebooks run once for the whole test session: Run All in JupyterLab, on a student's
machine (the light install alone, no HAProxy, Redis or Node).

The light install is `.tools/light-venv`, which `make setup` makes with
`pip install -e '.[notebooks]'` (editable, so it runs the working tree's code on exactly the
packages a student gets) and the tests never install. JupyterLab and its kernel run from
it with a PATH of symlinks to every program on this machine's PATH but haproxy,
redis-server and node (npm and npx with them). Two kernel start-up files watch every
figure: `figure_census.py` records which Python the kernel is, what it can reach, and any
plot that shows no data; `lessons.figure_rules` checks each figure a class must be able to
read. The notebooks run with QUICK=1, one after another in one JupyterLab, each kernel shut
down after its notebook, and each saved with its widgets' state once it has run, so the
book is built from these runs instead of running the notebooks again.

`LightRuns.run(name)` does a notebook's Run All the first time a test asks for it and
keeps what a reader saw: the tests of the light install assert on it
(`test_light_install.py`), the book is built from the saved notebooks (`test_book.py`),
and the notebook tests run a notebook with nbclient only for what this run cannot check
(`light_install_ready`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import chromium_installed, headless_chromium, wait_until
from tests.browser.jupyterlab import (
    ANSWER_TIMEOUT_S,
    HIDE,
    NOTEBOOK_OPEN_TIMEOUT_S,
    ROOT,
    SHOW,
    Lab,
    cells,
    choose_menu_item,
    errors_shown,
    figures_shown,
    kernel_idle,
    prompt,
    run_all,
    running_lab,
    visible_output,
)

LIGHT_VENV = ROOT / ".tools" / "light-venv"
LIGHT_PYTHON = LIGHT_VENV / "bin" / "python"
#: What a student's machine lacks: the cluster's programs and Node.
ABSENT_PROGRAMS = ("haproxy", "redis-server", "redis-cli", "node", "nodejs", "npm", "npx")
#: A bound on one notebook's Run All with QUICK=1 (the slowest takes about two minutes).
RUN_ALL_TIMEOUT_S = 480
#: The fewest sentences a notebook checks against its results outside its answers.
FEWEST_CLAIMS = 5
#: A bound on JupyterLab writing a notebook it was told to save.
SAVE_TIMEOUT_S = 60
CENSUS_SCRIPT = Path(__file__).with_name("figure_census.py")
#: A kernel start-up file that checks every figure the kernel renders against the rules a
#: class needs (`lessons.figure_rules`), one JSON line each in $MRTR_FIGURE_RULES. It cleans
#: up after itself, so the notebook's namespace starts as a reader's does.
FIGURE_RULES_STARTUP = """
def _check_figures() -> None:
    import os
    import pathlib

    from lessons import figure_rules

    figure_rules.install(pathlib.Path(os.environ["MRTR_FIGURE_RULES"]))


_check_figures()
del _check_figures
"""


def light_install_ready() -> bool:
    """Whether this machine can run the light install's Run All: the light install made by
    `make setup` and a headless Chromium to drive JupyterLab."""
    return (LIGHT_VENV / ".installed").exists() and chromium_installed()


@dataclass
class NotebookRun:
    """What a reader saw after a notebook's Run All, and the notebook as JupyterLab saved it.

    `printed` is the visible output of the cells outside the answers; `answers` what each
    solution cell showed before its button was pressed, `opened_answer` what the first
    showed after; `census` and `figures` the kernel's records (`figure_census.py`,
    `lessons.figure_rules`).
    """

    name: str
    errors: list[str]
    figure_widths: list[int]
    printed: str
    answers: list[str]
    opened_answer: str | None
    census: list[dict]
    figures: list[dict]
    executed: Path


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


def json_lines(path: Path) -> list[dict]:
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.splitlines()]


@dataclass
class LightRuns:
    """JupyterLab on the light install, a browser on it, and each notebook's Run All, done
    once when first asked for."""

    lab: Lab
    browser: WebDriver
    census: Path
    figure_rules: Path
    executed_dir: Path
    done: dict[str, NotebookRun | BaseException] = field(default_factory=dict)

    def run(self, name: str) -> NotebookRun:
        """`name`'s Run All (its file name in notebooks/), run now or remembered."""
        if name not in self.done:
            try:
                self.done[name] = self._run_all(name)
            except Exception as error:
                self.done[name] = error
        outcome = self.done[name]
        if isinstance(outcome, BaseException):
            raise AssertionError(f"Run All of {name} did not complete: {outcome}")
        return outcome

    def _run_all(self, name: str) -> NotebookRun:
        lab, browser = self.lab, self.browser
        notebook = nbformat.read(lab.root / name, as_version=4)
        solutions = [
            i
            for i, cell in enumerate(notebook.cells)
            if "solution" in cell.metadata.get("tags", [])
        ]
        shown_code = [
            i
            for i, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and i not in solutions
        ]
        self.census.write_text("")
        self.figure_rules.write_text("")
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
            shown = cells(browser)
            printed = "\n".join(visible_output(shown[i]) for i in shown_code)
            answers = [visible_output(shown[i]) for i in solutions]
            executed = self._save(name) if not errors else lab.root / name
            opened = self._open_first_answer(solutions) if solutions and not errors else None
            widths = figures_shown(browser)
        finally:
            lab.shut_down_kernels()
        return NotebookRun(
            name=name,
            errors=errors,
            figure_widths=widths,
            printed=printed,
            answers=answers,
            opened_answer=opened,
            census=json_lines(self.census),
            figures=json_lines(self.figure_rules),
            executed=executed,
        )

    def _save(self, name: str) -> Path:
        """File > Save Notebook, as a reader would; the saved notebook, copied aside for
        the book. The widgets' state is saved with it (`LAB_SETTINGS`)."""
        saved = self.lab.root / name
        before = saved.stat().st_mtime_ns
        choose_menu_item(self.browser, "File", "docmanager:save")

        def written(_: WebDriver) -> bool:
            if saved.stat().st_mtime_ns == before:
                return False
            try:
                notebook = nbformat.read(saved, as_version=4)
            except (ValueError, json.JSONDecodeError):
                return False  # still being written
            return any(cell.get("outputs") for cell in notebook.cells)

        wait_until(self.browser, written, SAVE_TIMEOUT_S, f"JupyterLab did not save {name}")
        self.executed_dir.mkdir(exist_ok=True)
        return Path(shutil.copy(saved, self.executed_dir / name))

    def _open_first_answer(self, solutions: list[int]) -> str:
        """Press the first answer's button; what its cell shows then."""
        first = min(solutions)
        button = cells(self.browser)[first].find_element(
            By.XPATH, f'.//button[normalize-space()="{SHOW}"]'
        )
        button.click()
        wait_until(
            self.browser,
            lambda b: (
                visible_output(cells(b)[first]).startswith(HIDE)
                and len(visible_output(cells(b)[first]).splitlines()) > 1
            ),
            ANSWER_TIMEOUT_S,
            "the button of the first exercise did not show its answer",
        )
        return visible_output(cells(self.browser)[first])


@contextmanager
def running_light_lab(tmp: Path) -> Iterator[LightRuns]:
    """JupyterLab from the light install in `tmp` and a browser on it (a skip where either
    is missing)."""
    if not (LIGHT_VENV / ".installed").exists():
        pytest.skip(f"{LIGHT_VENV} is missing: `make setup` makes the light install")
    light_kernel(tmp / "jupyter")
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    shutil.copy(CENSUS_SCRIPT, startup / "00-figure-census.py")
    (startup / "01-figure-rules.py").write_text(FIGURE_RULES_STARTUP)
    census, rules = tmp / "census.jsonl", tmp / "figure-rules.jsonl"
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
        "MRTR_FIGURE_RULES": str(rules),
    }
    with (
        running_lab(LIGHT_PYTHON, tmp, env) as lab,
        headless_chromium(tmp / "chromium-profile") as browser,
    ):
        yield LightRuns(
            lab=lab,
            browser=browser,
            census=census,
            figure_rules=rules,
            executed_dir=tmp / "executed",
        )

"""A notebook as a student meets it: JupyterLab in a real browser, Run All, and no answer shown.

JupyterLab serves a copy of notebooks/ (running a notebook must not write outputs into the
committed one). The notebook runs with QUICK=1 in its kernel; afterwards every solution cell
shows only its "Show the answer" button, and pressing one shows that answer. The file
browser lists each notebook once: JupyterLab hides the jupytext twins, as `make lab` does.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import nbformat
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.browser.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = ROOT / "notebooks"
#: The quickest notebook with QUICK=1: the test is about the browser, not the simulation.
NOTEBOOK = "08_capacity_planning.ipynb"
#: Bounds, so a hung server or kernel fails the test instead of stalling the suite.
SERVER_START_TIMEOUT_S = 90
NOTEBOOK_OPEN_TIMEOUT_S = 90
RUN_ALL_TIMEOUT_S = 240
ANSWER_TIMEOUT_S = 30
#: Settings a reader's JupyterLab would not need: every cell stays in the page (JupyterLab
#: otherwise drops the ones scrolled out of view) and no news is fetched (no network here).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}
SHOW_ANSWER = "Show the answer"


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it serves and the folder it serves."""

    url: str
    token: str
    root: Path

    def page(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_settings(folder: Path) -> None:
    for plugin, values in LAB_SETTINGS.items():
        path = folder / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    root = tmp_path / "notebooks"
    shutil.copytree(
        NOTEBOOKS_DIR, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    )
    settings = tmp_path / "settings"
    write_settings(settings)
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "QUICK": "1",
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ContentsManager.hide_globs=['__pycache__','*.pyc','[0-9][0-9]_*.py']",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
    ]
    log = (tmp_path / "jupyterlab.log").open("wb")
    server = subprocess.Popen(command, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            assert server.poll() is None, (tmp_path / "jupyterlab.log").read_text()
            try:
                if httpx.get(f"{url}/api/status", params={"token": token}).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "JupyterLab did not start"
            time.sleep(0.5)
        yield Lab(url=url, token=token, root=root)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def cells(browser: WebDriver) -> list[WebElement]:
    return browser.find_elements(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Notebook .jp-Cell")


def prompt(cell: WebElement) -> str:
    return cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt").get_attribute("textContent") or ""


def visible_output(cell: WebElement) -> str:
    """What a reader sees under a cell: the text of its displayed outputs, images counted."""
    parts = []
    for output in cell.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output"):
        if not output.is_displayed():
            continue
        parts.append(output.text.strip())
        images = [img for img in output.find_elements(By.TAG_NAME, "img") if img.is_displayed()]
        parts += [f"<image {img.get_attribute('width')}>" for img in images]
    return "\n".join(part for part in parts if part)


def kernel_idle(browser: WebDriver) -> bool:
    """The status bar says the notebook's kernel is idle."""
    items = browser.find_elements(By.CSS_SELECTOR, ".jp-StatusBar-TextItem")
    return any(item.text.endswith("| Idle") for item in items)


def run_all(browser: WebDriver) -> None:
    """Run > Run All Cells, from the menu bar as a reader would."""
    menus = browser.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
    next(menu for menu in menus if menu.text.strip() == "Run").click()
    item = wait_until(
        browser,
        lambda b: b.find_element(By.CSS_SELECTOR, '.lm-Menu-item[data-command="runmenu:run-all"]'),
        10,
        "the Run menu has no Run All Cells",
    )
    item.click()


def test_run_all_shows_no_answer_and_the_browser_lists_each_notebook_once(
    browser: WebDriver, lab: Lab
) -> None:
    notebook = nbformat.read(lab.root / NOTEBOOK, as_version=4)
    kinds = [cell.cell_type for cell in notebook.cells]
    solutions = [
        i for i, cell in enumerate(notebook.cells) if "solution" in cell.metadata.get("tags", [])
    ]
    assert solutions

    browser.get(lab.page(NOTEBOOK))
    wait_until(
        browser,
        lambda b: len(cells(b)) == len(kinds),
        NOTEBOOK_OPEN_TIMEOUT_S,
        f"{NOTEBOOK} did not open with its {len(kinds)} cells",
    )
    wait_until(
        browser,
        lambda b: b.find_elements(By.CSS_SELECTOR, ".jp-DirListing-item"),
        NOTEBOOK_OPEN_TIMEOUT_S,
        "the file browser stayed empty",
    )
    listed = [
        item.get_attribute("title") or item.text
        for item in browser.find_elements(By.CSS_SELECTOR, ".jp-DirListing-item")
    ]
    names = [
        item.find_element(By.CSS_SELECTOR, ".jp-DirListing-itemText").text
        for item in browser.find_elements(By.CSS_SELECTOR, ".jp-DirListing-item")
    ]
    for stem in sorted(p.stem for p in lab.root.glob("*.ipynb")):
        assert sum(name.startswith(stem) for name in names) == 1, (stem, names, listed)

    run_all(browser)
    code = [i for i, kind in enumerate(kinds) if kind == "code"]
    shown_code = [i for i in code if i not in solutions]

    def finished(b: WebDriver) -> bool:
        """Every cell ran: numbered prompts (a hidden input shows none), each solution's
        button drawn, and the kernel idle after the last of them."""
        shown = cells(b)
        return (
            all(re.fullmatch(r"\[\d+\]:", prompt(shown[i]).strip()) for i in shown_code)
            and all(visible_output(shown[i]) for i in solutions)
            and kernel_idle(b)
        )

    wait_until(browser, finished, RUN_ALL_TIMEOUT_S, "Run All did not finish")
    shown = cells(browser)
    errors = browser.find_elements(
        By.CSS_SELECTOR, '.jp-OutputArea-output[data-mime-type$="error"]'
    )
    assert not errors, errors[0].text

    # The rest of the notebook did show its results: tables and figures.
    rest = "\n".join(visible_output(shown[i]) for i in shown_code)
    assert "<image" in rest
    for i in solutions:
        assert visible_output(shown[i]) == SHOW_ANSWER, (i, visible_output(shown[i]))

    # A reader who asks gets the answer.
    first = shown[solutions[0]]
    first.find_element(By.XPATH, f'.//button[normalize-space()="{SHOW_ANSWER}"]').click()

    def answered(b: WebDriver) -> str | None:
        """The answer, once shown (the button's label and the output change separately)."""
        lines = visible_output(cells(b)[solutions[0]]).splitlines()
        if lines[:1] == ["Hide the answer"] and len(lines) > 1:
            return "\n".join(lines[1:])
        return None

    answer = wait_until(browser, answered, ANSWER_TIMEOUT_S, "the button did not show the answer")
    assert answer.strip()

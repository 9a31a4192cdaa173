"""JupyterLab as the browser tests drive it: started on a copy of notebooks/, and read as a
reader reads it (cells, prompts, outputs, errors, figures, the Run menu)."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from lessons.answers import HIDE as HIDE
from lessons.answers import SHOW as SHOW
from tests.browser.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = ROOT / "notebooks"

#: Bounds, so a hung server or kernel fails the test instead of stalling the suite.
SERVER_START_TIMEOUT_S = 90
NOTEBOOK_OPEN_TIMEOUT_S = 90
ANSWER_TIMEOUT_S = 30
#: Settings a reader's JupyterLab would not need: every cell stays in the page (JupyterLab
#: otherwise drops the ones scrolled out of view), no news is fetched (no network here), and
#: a saved notebook keeps its widgets' state (the book is built from the saved runs).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyter-widgets/jupyterlab-manager/plugin": {"saveState": True},
}
#: What `make lab` hides, so that JupyterLab lists each notebook once.
HIDE_GLOBS = "['__pycache__','*.pyc','[0-9][0-9]_*.py']"
#: How an error shows under a cell: JupyterLab draws a traceback as standard error, like a
#: warning, so it is told apart by its text (IPython's traceback, or its short form for a
#: syntax error).
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^Cell In\[\d+\], line \d+", re.M)


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it serves and the folder it serves."""

    url: str
    token: str
    root: Path

    def page(self, path: str) -> str:
        """The notebook in a workspace of its own, so no earlier notebook's tab reopens."""
        return f"{self.url}/lab/workspaces/{Path(path).stem}/tree/{path}?token={self.token}"

    def shut_down_kernels(self) -> None:
        params = {"token": self.token}
        for session in httpx.get(f"{self.url}/api/sessions", params=params).json():
            httpx.delete(f"{self.url}/api/sessions/{session['id']}", params=params)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_lab(python: Path, folder: Path, env: dict[str, str]) -> Iterator[Lab]:
    """JupyterLab from `python`, serving a copy of notebooks/ in `folder`, with its own
    settings, workspaces and runtime there; stopped on the way out, whatever happened."""
    root = folder / "notebooks"
    shutil.copytree(
        NOTEBOOKS_DIR, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
    )
    settings = folder / "settings"
    for plugin, values in LAB_SETTINGS.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    command = [
        str(python),
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--ContentsManager.hide_globs={HIDE_GLOBS}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={folder / 'workspaces'}",
    ]
    log_path = folder / "jupyterlab.log"
    log = log_path.open("wb")
    server = subprocess.Popen(command, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            assert server.poll() is None, log_path.read_text()
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


def choose_menu_item(browser: WebDriver, menu: str, command: str) -> None:
    """The item of the menu bar's `menu` that runs `command`, chosen as a reader would."""
    menus = browser.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
    next(item for item in menus if item.text.strip() == menu).click()
    item = wait_until(
        browser,
        lambda b: b.find_element(By.CSS_SELECTOR, f'.lm-Menu-item[data-command="{command}"]'),
        10,
        f"the {menu} menu has no {command}",
    )
    item.click()


def run_all(browser: WebDriver) -> None:
    """Run > Run All Cells, from the menu bar as a reader would."""
    choose_menu_item(browser, "Run", "runmenu:run-all")


def errors_shown(browser: WebDriver) -> list[str]:
    """The tracebacks under the page's cells."""
    outputs = browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output")
    texts = [output.get_attribute("textContent") or "" for output in outputs]
    return [text for text in texts if TRACEBACK.search(text)]


def figures_shown(browser: WebDriver) -> list[int]:
    """The width in pixels of each figure the page shows (0 for one that failed to load)."""
    return [
        int(img.get_attribute("naturalWidth") or 0)
        for img in browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output img")
        if img.is_displayed()
    ]


def listed_names(browser: WebDriver) -> list[str]:
    """The names the file browser lists."""
    return [
        (
            item.find_element(By.CSS_SELECTOR, ".jp-DirListing-itemText").get_attribute(
                "textContent"
            )
            or ""
        ).strip()
        for item in browser.find_elements(By.CSS_SELECTOR, ".jp-DirListing-item")
    ]

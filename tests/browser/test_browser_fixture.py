"""The browser fixture: drives the system Chromium where it is installed, and where it is not,
skips with a message saying what to install instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import CHROMIUM_ENV

ROOT = Path(__file__).resolve().parents[2]


def test_the_browser_renders_a_page_and_runs_its_script(browser: WebDriver) -> None:
    browser.get(
        "data:text/html,<title>lab</title><p id=out></p>"
        "<script>document.getElementById('out').textContent = 6 * 7</script>"
    )
    assert browser.title == "lab"
    assert browser.find_element(By.ID, "out").text == "42"


def test_without_chromium_the_browser_tests_skip_saying_what_to_install(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-chromium"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            __file__,
            "-k",
            "renders_a_page",
        ],
        cwd=ROOT,
        env={**os.environ, CHROMIUM_ENV: str(missing)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "headless Chromium is missing" in result.stdout
    assert str(missing) in result.stdout
    assert "apt-get install chromium chromium-driver" in result.stdout

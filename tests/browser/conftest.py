"""A real browser for the tests: the system's headless Chromium driven by its own chromedriver.

`make setup` installs both from Debian (`chromium`, `chromium-driver`: one build, so their
versions match) and Selenium drives them; nothing is downloaded at test time. Where either
program is missing, every test that asks for `browser` is skipped with a message saying what
to install. MRTR_CHROMIUM and MRTR_CHROMEDRIVER point the fixture at other binaries.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.wait import WebDriverWait

CHROMIUM_ENV = "MRTR_CHROMIUM"
CHROMEDRIVER_ENV = "MRTR_CHROMEDRIVER"
#: Headless, as root in a container (no sandbox, small /dev/shm), no GPU, and no calls home:
#: the machine reaches no network but package registries.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--window-size=1400,1000",
)
#: A bound on loading one page, so a hung server fails the test instead of stalling the suite.
PAGE_LOAD_TIMEOUT_S = 60

if TYPE_CHECKING:
    from tests.browser.light_install import LightRuns

T = TypeVar("T")


@dataclass(frozen=True)
class SystemChromium:
    """Where the browser and the chromedriver of the same build live."""

    browser: Path
    driver: Path


def _executable(env: str, names: tuple[str, ...]) -> Path | None:
    chosen = os.environ.get(env)
    candidates = [chosen] if chosen else [shutil.which(name) for name in names]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and Path(candidate).is_file():
            return Path(candidate)
    return None


def system_chromium() -> SystemChromium:
    """The installed Chromium and chromedriver, or a skip naming what is missing."""
    browser = _executable(CHROMIUM_ENV, ("chromium", "chromium-browser"))
    driver = _executable(CHROMEDRIVER_ENV, ("chromedriver",))
    if browser is None or driver is None:
        missing = [
            f"{what} ({os.environ.get(env) or 'not on PATH'})"
            for what, env, found in (
                ("Chromium", CHROMIUM_ENV, browser),
                ("chromedriver", CHROMEDRIVER_ENV, driver),
            )
            if found is None
        ]
        pytest.skip(
            f"headless Chromium is missing: {', '.join(missing)}; `make setup` as root installs "
            "it, or `apt-get install chromium chromium-driver`"
        )
    return SystemChromium(browser=browser, driver=driver)


def chromium_installed() -> bool:
    """Whether the system's Chromium and its chromedriver are both there."""
    return all(
        _executable(env, names) is not None
        for env, names in (
            (CHROMIUM_ENV, ("chromium", "chromium-browser")),
            (CHROMEDRIVER_ENV, ("chromedriver",)),
        )
    )


@contextmanager
def headless_chromium(profile: Path) -> Iterator[WebDriver]:
    """A headless Chromium with a fresh profile in `profile`, quit on the way out whatever
    happened (a skip where it is missing)."""
    chromium = system_chromium()
    options = Options()
    options.binary_location = str(chromium.browser)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=Service(str(chromium.driver)))
    try:
        driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    """A headless Chromium with a fresh profile, quit after the test whatever happened."""
    with headless_chromium(tmp_path / "chromium-profile") as driver:
        yield driver


@pytest.fixture(scope="session")
def light_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LightRuns]:
    """Every notebook's Run All in the light install's JupyterLab, each done once for the
    session when a test first asks for it (`tests/browser/light_install.py`)."""
    from tests.browser.light_install import running_light_lab

    with running_light_lab(tmp_path_factory.mktemp("light-lab")) as runs:
        yield runs


def wait_until(
    driver: WebDriver, condition: Callable[[WebDriver], T], timeout_s: float, message: str
) -> T:
    """The first truthy value of `condition`, polled for at most `timeout_s`."""
    return WebDriverWait(driver, timeout_s, poll_frequency=0.25).until(condition, message)

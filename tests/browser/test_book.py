"""The book as a reader opens it: from disk, in a browser that can reach no other host.

Building the whole book executes all eight notebooks (minutes), so the test builds two of
them with every docs page, through the same code as `make book`: notebook 01 (a sequence
diagram, answers with figures) and 02 (a diagram, sliders whose state the page embeds).
It runs neither again: the book is built from the notebooks the light install's Run All
saved, widget state and all (`tests/browser/light_install.py`, `python -m book
--executed`), and runs them itself only where that install is missing.
Chromium resolves no host name (`--host-resolver-rules`), so anything a page fetched from
elsewhere would fail and show in its log; a control page proves such a failure is seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from book.build import NOTEBOOKS_DIR, build
from book.diagrams import MERMAID_BLOCK, MERMAID_JS
from book.editions import SOLUTION_TAG, Edition, readable, solution_texts, widget_models
from book.pages import remote_loads, visible_text
from book.sources import WIDGETS_DIST
from tests.browser.conftest import CHROMIUM_FLAGS, PAGE_LOAD_TIMEOUT_S, system_chromium, wait_until
from tests.browser.light_install import LightRuns, light_install_ready

SUBSET = ("01_mrtr_protocol.ipynb", "02_three_architectures.ipynb")
#: The notebook of the two whose sliders' state the run saved and the page embeds.
WITH_SLIDERS = "02_three_architectures.ipynb"
NO_HOST_RESOLVES = "--host-resolver-rules=MAP * ~NOTFOUND"
#: What Chromium logs when a page asks for something it cannot reach.
FAILED_LOAD = re.compile(r"net::ERR_\w+")
RENDER_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """Both editions of the two notebooks and the docs, built once for the module from
    the light install's runs of the notebooks (or from runs of its own without it)."""
    system_chromium()
    for needed in (MERMAID_JS, WIDGETS_DIST / "embed.js"):
        if not needed.is_file():
            pytest.skip(f"{needed} is missing: `make setup` installs it")
    executed = None
    if light_install_ready():
        runs: LightRuns = request.getfixturevalue("light_runs")
        executed = runs.executed_dir
        for name in SUBSET:
            errors = runs.run(name).errors
            assert not errors, f"{name} failed in the light install's Run All:\n{errors[0]}"
    out = tmp_path_factory.mktemp("book")
    build([NOTEBOOKS_DIR / name for name in SUBSET], out, executed)
    return out


@pytest.fixture
def offline(tmp_path: Path) -> Iterator[WebDriver]:
    """A headless Chromium that resolves no host name and keeps the page's log."""
    chromium = system_chromium()
    options = Options()
    options.binary_location = str(chromium.browser)
    for flag in (*CHROMIUM_FLAGS, NO_HOST_RESOLVES):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(chromium.driver)))
    try:
        driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
        yield driver
    finally:
        driver.quit()


def open_page(browser: WebDriver, path: Path) -> None:
    browser.get(path.as_uri())
    wait_until(
        browser,
        lambda b: b.execute_script("return document.readyState") == "complete",
        RENDER_TIMEOUT_S,
        f"{path} did not load",
    )


def outside_requests(browser: WebDriver) -> list[str]:
    """What the page asked of other hosts: failed loads in its log, and any resource it
    fetched, that are not files of the book. (From disk the search page cannot fetch the
    pages it finds to quote them: a file that fails is no request to another host.)"""
    failed = [
        entry["message"]
        for entry in browser.get_log("browser")
        if FAILED_LOAD.search(entry["message"]) and not entry["message"].startswith("file:")
    ]
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map((entry) => entry.name)"
    )
    return failed + [url for url in fetched if not url.startswith(("file:", "data:"))]


def edition_source(book: Path, which: Edition, name: str) -> nbformat.NotebookNode:
    """The notebook as the edition's page was made from it."""
    return nbformat.read(book / "src" / which.value / "notebooks" / name, as_version=4)


def page(book: Path, which: Edition, name: str) -> Path:
    return book / which.value / "notebooks" / f"{Path(name).stem}.html"


def test_a_request_to_another_host_is_seen(offline: WebDriver, tmp_path: Path) -> None:
    control = tmp_path / "control.html"
    control.write_text('<!doctype html><img src="https://example.org/figure.png">')
    open_page(offline, control)
    assert any("example.org" in request for request in outside_requests(offline))


@pytest.mark.parametrize("which", list(Edition), ids=[e.value for e in Edition])
@pytest.mark.parametrize("name", SUBSET)
def test_each_notebook_page_shows_its_figures_diagrams_widgets_and_answers_offline(
    book: Path, offline: WebDriver, which: Edition, name: str
) -> None:
    source = edition_source(book, which, name)
    open_page(offline, page(book, which, name))

    figures = [
        img
        for img in offline.find_elements(By.CSS_SELECTOR, ".cell_output img")
        if int(img.get_attribute("naturalWidth") or 0) > 0 and img.is_displayed()
    ]
    assert figures, "no figure drawn"

    diagrams = sum(
        len(MERMAID_BLOCK.findall(cell.source))
        for cell in nbformat.read(NOTEBOOKS_DIR / name, as_version=4).cells
        if cell.cell_type == "markdown"
    )
    drawn = offline.find_elements(By.CSS_SELECTOR, "figure.mermaid-diagram svg")
    assert len(drawn) == diagrams
    assert all(svg.size["width"] > 100 and svg.size["height"] > 100 for svg in drawn)
    assert all(svg.find_elements(By.TAG_NAME, "text") for svg in drawn)

    if name == WITH_SLIDERS:
        assert widget_models(source), "the executed notebook kept no widget state"
    if widget_models(source):
        rendered = wait_until(
            offline,
            lambda b: b.find_elements(By.CSS_SELECTOR, ".widget-slider"),
            RENDER_TIMEOUT_S,
            "the embedded widgets were not drawn",
        )
        assert all(slider.is_displayed() for slider in rendered)
        assert "Error displaying widget" not in offline.find_element(By.TAG_NAME, "body").text

    buttons = offline.find_elements(By.CSS_SELECTOR, ".cell details > summary")
    solutions = [c for c in source.cells if SOLUTION_TAG in c.metadata.get("tags", [])]
    if which is Edition.STUDENT:
        assert buttons == [] and solutions == []
    else:
        assert len(buttons) == len(solutions) > 0
        answer = (
            buttons[0].find_element(By.XPATH, "..").find_element(By.CSS_SELECTOR, ".cell_output")
        )
        assert not answer.is_displayed()
        label = buttons[0].text
        offline.execute_script("arguments[0].scrollIntoView()", buttons[0])
        buttons[0].click()
        wait_until(offline, lambda b: answer.is_displayed(), 10, "the answer did not open")
        assert buttons[0].text != label and answer.text.strip()

    assert outside_requests(offline) == []


def test_the_student_edition_holds_no_answer_text_and_the_teachers_every_one(
    book: Path, offline: WebDriver
) -> None:
    student_site = " ".join(
        visible_text(path.read_text(encoding="utf-8"))
        for path in (book / Edition.STUDENT.value).rglob("*.html")
    )
    for name in SUBSET:
        texts = solution_texts(edition_source(book, Edition.TEACHER, name))
        assert len(texts) >= 3, texts
        shown = {}
        for which in Edition:
            open_page(offline, page(book, which, name))
            body = offline.execute_script("return document.body.textContent")
            shown[which] = readable(body)
        assert [text for text in texts if text in shown[Edition.STUDENT]] == []
        assert [text for text in texts if text not in shown[Edition.TEACHER]] == []
        assert [text for text in texts if text in readable(student_site)] == []


def test_the_search_finds_pages_offline(book: Path, offline: WebDriver) -> None:
    open_page(offline, book / Edition.STUDENT.value / "search.html")
    offline.get(f"{(book / Edition.STUDENT.value / 'search.html').as_uri()}?q=requestState")
    results = wait_until(
        offline,
        lambda b: b.find_elements(By.CSS_SELECTOR, "#search-results li a"),
        RENDER_TIMEOUT_S,
        "the search found nothing",
    )
    targets = {a.get_attribute("href") or "" for a in results}
    assert any("/notebooks/01_mrtr_protocol.html" in target for target in targets), targets
    assert outside_requests(offline) == []


def test_no_page_of_either_edition_loads_from_another_host(book: Path) -> None:
    for which in Edition:
        site = book / which.value
        assert len(list(site.rglob("*.html"))) >= len(SUBSET) + 2
        assert remote_loads(site) == []

"""The book as a reader opens it: from disk, in a browser that can reach no other host.

Building the whole book executes all eight notebooks (minutes), so the test builds two of
them with every docs page, through the same code as `make book`: notebook 01 (a sequence
diagram, answers with figures) and 02 (a diagram, sliders whose state the page embeds).
It runs neither again: the book is built from the notebooks the light install's Run All
saved, widget state and all (`tests/browser/light_install.py`, `python -m book
--executed`), and runs them itself only where that install is missing.
A third, small notebook of the tests' own, run by the build's runner, holds an interactive
(two sliders drawing a figure) whose steps the build records: the page's controls are moved
as a reader would and must show that step's result; notebook 02's controls, from the
light install's run, say they run in JupyterLab (or switch, where the book ran it itself).
Chromium resolves no host name (`--host-resolver-rules`), so anything a page fetched from
elsewhere would fail and show in its log; a control page proves such a failure is seen.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from book.build import NOTEBOOKS_DIR, build, execute
from book.control_pages import RUNS_IN_JUPYTERLAB
from book.diagrams import MERMAID_BLOCK, MERMAID_JS
from book.editions import SOLUTION_TAG, Edition, readable, solution_texts, widget_models
from book.handouts import handout_name
from book.pages import remote_loads, visible_text
from book.sources import WIDGETS_DIST
from lessons.answers import HIDE, SHOW
from tests.browser.conftest import CHROMIUM_FLAGS, PAGE_LOAD_TIMEOUT_S, system_chromium, wait_until
from tests.browser.light_install import LightRuns, light_install_ready

#: The module's book is built in its first test's set-up, after the light install's Run All
#: of both notebooks when no earlier test asked for it (minutes on a busy machine).
pytestmark = pytest.mark.timeout(900)

SUBSET = ("01_mrtr_protocol.ipynb", "02_three_architectures.ipynb")
#: The notebook of the two whose sliders' state the run saved and the page embeds.
WITH_SLIDERS = "02_three_architectures.ipynb"
NO_HOST_RESOLVES = "--host-resolver-rules=MAP * ~NOTFOUND"
#: What Chromium logs when a page asks for something it cannot reach.
FAILED_LOAD = re.compile(r"net::ERR_\w+")
RENDER_TIMEOUT_S = 30
#: The tests' own notebook: an interactive whose function prints and draws its values.
WITH_CONTROLS = "90_controls.ipynb"
CONTROLS = """import ipywidgets as widgets
from matplotlib import pyplot as plt


def draw(replicas=4, think_s=10.0):
    print(f"simulated with {replicas} replicas and {think_s:.1f} s of thinking")
    plt.figure(figsize=(4, 2))
    plt.bar(["replicas", "think (s)"], [replicas, think_s])
    plt.title(f"{replicas} replicas")
    plt.show()


widgets.interactive(
    draw,
    replicas=widgets.IntSlider(value=4, min=1, max=16, description="replicas"),
    think_s=widgets.FloatLogSlider(
        value=10, base=10, min=0, max=2, readout_format=".1f", description="think (s)"
    ),
)
"""


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """Both editions of the two notebooks, the tests' own with controls and the docs, built
    once for the module from the light install's runs of the notebooks (or from runs of its
    own without it); the tests' notebook is run by the build's runner, steps recorded."""
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
    controls = tmp_path_factory.mktemp("controls") / WITH_CONTROLS
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(CONTROLS)]
    nbformat.write(notebook, controls)
    if executed is not None:
        folder = tmp_path_factory.mktemp("executed")
        for name in SUBSET:
            shutil.copy2(executed / name, folder / name)
        nbformat.write(execute(controls), folder / WITH_CONTROLS)
        executed = folder
    out = tmp_path_factory.mktemp("book")
    build([*(NOTEBOOKS_DIR / name for name in SUBSET), controls], out, executed)
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

    own_controls = offline.find_elements(By.CSS_SELECTOR, ".control-steps input[type=range]")
    if name == WITH_SLIDERS:
        assert own_controls or widget_models(source), "the page shows no controls"
    if own_controls:
        assert all(control.is_displayed() for control in own_controls)
    elif name == WITH_SLIDERS:
        assert RUNS_IN_JUPYTERLAB in offline.find_element(By.TAG_NAME, "body").text
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
        shown = readable(offline.find_element(By.TAG_NAME, "body").text)
        assert readable(SHOW) not in shown and readable(HIDE) not in shown
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


def shown_result(browser: WebDriver) -> WebElement:
    [result] = [
        result
        for result in browser.find_elements(By.CSS_SELECTOR, ".control-steps-result")
        if result.is_displayed()
    ]
    return result


def readout(control: WebElement) -> str:
    return str(control.find_element(By.XPATH, "following-sibling::output").text)


@pytest.mark.parametrize("which", list(Edition), ids=[e.value for e in Edition])
def test_moving_a_slider_shows_the_result_recorded_for_its_value(
    book: Path, offline: WebDriver, which: Edition
) -> None:
    open_page(offline, page(book, which, WITH_CONTROLS))
    replicas, think = offline.find_elements(By.CSS_SELECTOR, ".control-steps input[type=range]")
    start = shown_result(offline)
    assert readout(replicas) == "4" and readout(think) == "10.0"
    assert "simulated with 4 replicas and 10.0 s of thinking" in start.text
    start_figure = start.find_element(By.TAG_NAME, "img").get_attribute("src")

    offline.execute_script("arguments[0].scrollIntoView()", replicas)
    replicas.send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
    moved = shown_result(offline)
    value = readout(replicas)
    assert int(value) > 4
    assert f"simulated with {value} replicas and 10.0 s of thinking" in moved.text
    figure = moved.find_element(By.TAG_NAME, "img")
    assert int(figure.get_attribute("naturalWidth") or 0) > 0
    assert figure.get_attribute("src") != start_figure

    think.send_keys(Keys.HOME)
    assert readout(replicas) == "4" and readout(think) == "1.0"
    assert "simulated with 4 replicas and 1.0 s of thinking" in shown_result(offline).text
    assert outside_requests(offline) == []


def test_a_page_prints_as_a_handout(book: Path, offline: WebDriver) -> None:
    open_page(offline, page(book, Edition.STUDENT, WITH_CONTROLS))
    article = offline.find_element(By.CSS_SELECTOR, "article")
    on_screen = article.size["width"]
    offline.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    for chrome in (".bd-sidebar-primary", ".bd-header", ".control-steps-sliders"):
        assert not any(e.is_displayed() for e in offline.find_elements(By.CSS_SELECTOR, chrome))
    figure = shown_result(offline).find_element(By.TAG_NAME, "img")
    assert article.size["width"] > on_screen
    assert figure.size["width"] >= 0.9 * article.size["width"]


def test_each_edition_is_zipped_to_hand_out(book: Path) -> None:
    for which in Edition:
        with zipfile.ZipFile(book / f"{handout_name(which)}.zip") as handout:
            names = set(handout.namelist())
        built = {
            f"{handout_name(which)}/{path.relative_to(book / which.value).as_posix()}"
            for path in (book / which.value).rglob("*")
            if path.is_file() and path.name != ".buildinfo"
        }
        assert names == built
        assert f"{handout_name(which)}/notebooks/02_three_architectures.html" in names


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

"""The swarm's web UI in a real browser: Locust's page shows the lab's tabs, the replicas,
fault buttons that work, the Lab chart with the fault drawn on it, and the timeline in words
on the browser's clock."""

from __future__ import annotations

import datetime

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import wait_until
from tests.loadtest.test_swarm import needs_haproxy, ui_swarm  # noqa: F401 (a fixture)


def tab(browser: WebDriver, title: str) -> object:
    """Locust's tab of this title, once the page shows it (None until then)."""
    for element in browser.find_elements(By.CSS_SELECTOR, "[role=tab]"):
        if element.text.strip().lower() == title.lower():
            return element
    return None


def browser_clock(browser: WebDriver) -> datetime.datetime:
    """The browser's wall clock now, in its own time zone (what Locust's charts show)."""
    iso = browser.execute_script(
        "const d = new Date(); return new Date(d - d.getTimezoneOffset() * 60000).toISOString()"
    )
    return datetime.datetime.fromisoformat(iso.removesuffix("Z"))


@needs_haproxy
def test_the_lab_tab_lists_the_replicas_and_its_button_starts_an_upgrade(
    browser: WebDriver,
    ui_swarm: str,  # noqa: F811
) -> None:
    browser.get(f"{ui_swarm}/?tab=lab")
    wait_until(browser, lambda b: tab(b, "Lab") and tab(b, "Lab timeline"), 60, "no lab tabs")
    wait_until(browser, lambda b: "r2" in b.find_element(By.TAG_NAME, "table").text, 30, "no r2")
    header = browser.find_element(By.TAG_NAME, "table").text
    assert "Tool version" in header and "Held calls" in header

    panel = browser.find_element(By.ID, "lab-faults")
    wait_until(browser, lambda b: panel.is_displayed(), 10, "the fault buttons are hidden")
    wait_until(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "svg.lab-chart"), 30, "no chart")
    clicked = browser_clock(browser)
    panel.find_element(By.CSS_SELECTOR, "[data-fault=rolling-upgrade]").click()
    status = browser.find_element(By.ID, "lab-status")
    try:
        wait_until(browser, lambda b: status.text.startswith("started at"), 30, "no upgrade")
    except TimeoutException:
        raise AssertionError(f"no upgrade started; the status line says {status.text!r}") from None
    assert "rolling upgrade to tool version 2: each replica in turn drained" in status.text
    # The upgrade is drawn as a span on both charts of the Lab chart.
    wait_until(
        browser,
        lambda b: len(b.find_elements(By.CSS_SELECTOR, "svg.lab-chart rect.lab-fault")) == 2,
        20,
        "no fault drawn on the Lab chart",
    )
    assert browser.find_element(By.ID, "lab-failures").text.startswith("Failures explained")

    tab(browser, "Lab timeline").click()
    wait_until(browser, lambda b: "r1 draining" in b.page_source, 30, "not in the timeline")
    wait_until(browser, lambda b: not panel.is_displayed(), 10, "buttons beyond the Lab tab")
    rows = browser.find_element(By.TAG_NAME, "table").text.splitlines()
    (started,) = [row for row in rows if "rolling upgrade started" in row]
    at = datetime.datetime.combine(clicked.date(), datetime.time.fromisoformat(started[:8]))
    apart_s = (at - clicked).total_seconds() % 86400  # the same clock, across midnight too
    assert min(apart_s, 86400 - apart_s) < 5, (started, clicked)

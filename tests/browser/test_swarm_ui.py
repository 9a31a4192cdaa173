"""The swarm's web UI in a real browser: Locust's page shows the lab's tabs, the replicas and
fault buttons that work."""

from __future__ import annotations

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
    panel.find_element(By.CSS_SELECTOR, "[data-fault=rolling-upgrade]").click()
    status = browser.find_element(By.ID, "lab-status")
    wait_until(browser, lambda b: status.text.startswith("started"), 20, "no upgrade started")

    tab(browser, "Lab timeline").click()
    wait_until(browser, lambda b: "upgrade start" in b.page_source, 30, "not in the timeline")
    wait_until(browser, lambda b: not panel.is_displayed(), 10, "buttons beyond the Lab tab")

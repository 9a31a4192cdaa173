"""The swarm's web UI refuses other pages and rebound names, and serves its own tab."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask

from loadtest.labtab import caller, tab
from loadtest.labtab.control import FaultRefused

UI = "127.0.0.1:8089"
#: What a browser sends with a form another site's page posts to the UI.
CROSS_SITE = {"Host": UI, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
#: What the tab's own script sends (`tab.js`).
OWN_PAGE = {"Host": UI, "Origin": f"http://{UI}", "Sec-Fetch-Site": "same-origin"}


class Lab:
    """A control that records each fault it was asked for."""

    def __init__(self) -> None:
        self.injected: list[str] = []

    @property
    def events(self) -> list[dict[str, Any]]:
        return []

    def replicas(self) -> list[dict[str, Any]]:
        return [{"id": "r1", "version": 1, "held": 0, "in_flight": 0}]

    def load(self) -> None:
        return None

    def inject(self, fault: str, replica: str | None = None) -> dict[str, Any]:
        if fault not in ("rolling-upgrade", "crash", "restart", "redis-outage"):
            raise FaultRefused(f"no fault {fault}")
        self.injected.append(fault)
        return {"fault": fault, "replica": replica, "said": fault}


@pytest.fixture
def ui() -> tuple[Any, Lab]:
    app = Flask("lab")

    @app.get("/stats/requests")
    def stats() -> dict[str, Any]:
        return {"errors": []}

    web_ui = SimpleNamespace(app=app, template_args={})
    lab = Lab()
    tab.install(web_ui, lab, sample_every_s=None)
    return app.test_client(), lab


ROUTES = [
    ("GET", "/lab/replicas"),
    ("GET", "/lab/events"),
    ("GET", "/lab/chart"),
    ("GET", "/lab/tab.js"),
    ("GET", "/stats/requests"),
    *[
        ("POST", f"/lab/faults/{f}")
        for f in ("rolling-upgrade", "crash", "restart", "redis-outage")
    ],
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_another_sites_page_is_refused_on_every_route(ui: Any, method: str, path: str) -> None:
    client, lab = ui
    for headers in (
        CROSS_SITE,
        {**CROSS_SITE, "X-Lab-Tab": "1"},  # a script that tried would need a preflight first
        {**OWN_PAGE, "Origin": "null"},
        {**OWN_PAGE, "Origin": "http://127.0.0.1:3000"},  # another page on this machine
        {**OWN_PAGE, "Sec-Fetch-Site": "same-site"},
        {**OWN_PAGE, "Host": "attacker.example"},  # a name rebound to 127.0.0.1
        {"Host": "attacker.example:8089"},
    ):
        answer = client.open(path, method=method, headers=headers, data={"replica": "r1"})
        assert answer.status_code == 403, (headers, answer.status_code)
        assert answer.get_json()["error"].startswith("Forbidden: ")
    assert lab.injected == []


@pytest.mark.parametrize("fault", ["rolling-upgrade", "crash", "restart", "redis-outage"])
def test_a_fault_needs_the_tabs_header_even_without_origin(ui: Any, fault: str) -> None:
    client, lab = ui
    form = client.post(f"/lab/faults/{fault}", headers={"Host": UI}, data={"replica": "r1"})
    assert form.status_code == 403 and "X-Lab-Tab" in form.get_json()["error"]
    assert lab.injected == []
    started = client.post(f"/lab/faults/{fault}", headers={**OWN_PAGE, "X-Lab-Tab": "1"}, json={})
    assert started.status_code == 202 and lab.injected == [fault]


def test_the_tabs_own_page_and_clients_that_are_not_browsers_read_it(ui: Any) -> None:
    client, _ = ui
    for headers in (OWN_PAGE, {"Host": UI}, {"Host": "localhost:8089"}, {"Host": "[::1]:8089"}):
        assert client.get("/lab/replicas", headers=headers).get_json()[0]["id"] == "r1"
    typed = {"Host": UI, "Sec-Fetch-Site": "none"}  # the address bar
    assert client.get("/stats/requests", headers=typed).status_code == 200


def test_the_tabs_script_sends_the_header_with_a_fault() -> None:
    assert f'"{caller.TAB_HEADER}": "1"' in tab.SCRIPT.read_text()

"""The lab's own tab in Locust's web UI: the replicas, the faults, and what they did.

Built on Locust's extension points: the web UI's Flask app gets a blueprint with the
lab's routes, and the UI's `extended_tabs` / `extended_tables` show three extra tabs, fed
through the `extended_stats` of the UI's own `/stats/requests` poll:

    Lab            one row per replica: version, health, balancer state, requests it served
                   since it started (`/metrics`), the swarm's requests it answered and
                   their share, requests in flight and calls held (`/healthz`)
    Lab timeline   every fault and cluster event in words, at its time on the clock
                   Locust's charts use (the browser's)
    Lab tools      one row per tool called: calls, completed, failed, lost, rounds per
                   completed call, p50/p95/p99, and the failures in the server's words

A script (`tab.js`) adds, under the Lab tab, the fault buttons, the Lab chart (the
swarm's requests, failures and held calls per second on that clock, each fault's span
drawn over them: `loadtest.labtab.series`) and the failures explained. The same
explanations follow each error in Locust's own Failures tab. Routes:

    GET  /lab/replicas             JSON list, each with `id`, `version`, `held`, `in_flight`
    GET  /lab/events               the timeline, JSON: each event with `clock` and `said`
    GET  /lab/chart                the chart's points, the faults' spans, the failures
                                   explained
    POST /lab/faults/<fault>       rolling-upgrade, crash, restart, redis-outage;
                                   optional `replica` (form, JSON or query); 202 when
                                   started (with `said`, in words), 409 when refused (busy,
                                   or faults come from the operator of a `--target`)

Every request to the UI, the lab's routes and Locust's own, first passes
`loadtest.labtab.caller`: this machine's `Host`, the UI's own `Origin`, and for a fault the
header `X-Lab-Tab: 1` the tab's script sends; a refusal is a 403.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Protocol

from flask import Blueprint, Response, jsonify, request

from loadtest.labtab import caller
from loadtest.labtab.control import FaultRefused
from loadtest.labtab.series import (
    LabSeries,
    Load,
    Totals,
    error_text,
    locust_totals,
    sample_forever,
)
from loadtest.swarm.event_log import clock, fault_spans, in_words
from loadtest.swarm.tool_table import tool_rows

SCRIPT = Path(__file__).with_name("tab.js")
#: The cookie in which the page tells the server its clock's offset from UTC, in minutes.
UTC_OFFSET_COOKIE = "lab_utc_offset_min"
REPLICA_COLUMNS = [
    ("id", "Replica"),
    ("version", "Tool version"),
    ("health", "Health"),
    ("balancer", "Balancer"),
    ("requests", "Served since start"),
    ("swarm_requests", "Swarm's requests"),
    ("share_pct", "Share %"),
    ("in_flight", "In flight"),
    ("held", "Held calls"),
]
TIMELINE_COLUMNS = [("clock", "Time"), ("said", "What happened")]
TOOL_COLUMNS = [
    ("tool", "Tool"),
    ("calls", "Calls"),
    ("completed", "Completed"),
    ("failed", "Failed"),
    ("lost", "Lost"),
    ("rounds_mean", "Rounds per call"),
    ("p50_ms", "p50 ms"),
    ("p95_ms", "p95 ms"),
    ("p99_ms", "p99 ms"),
    ("failures", "Failures, in the server's words"),
]


class Control(Protocol):
    """What the tab needs from the lab's control (`loadtest.labtab.control`)."""

    @property
    def events(self) -> list[dict[str, Any]]: ...

    def replicas(self) -> list[dict[str, Any]]: ...

    def load(self) -> Load | None: ...

    def inject(self, fault: str, replica: str | None = None) -> dict[str, Any]: ...


def timeline(
    events: list[dict[str, Any]], utc_offset_min: int | None = None
) -> list[dict[str, Any]]:
    """The events as table rows: each as logged, with its `clock` time and `said` in words."""
    return [{**e, "clock": clock(e["t"], utc_offset_min), "said": in_words(e)} for e in events]


def _utc_offset_min() -> int | None:
    try:
        return int(request.cookies[UTC_OFFSET_COOKIE])
    except (KeyError, ValueError):
        return None


class _Tab:
    """The tab's state: the control, the Locust environment's totals, the series."""

    def __init__(self, web_ui: Any, control: Control) -> None:
        self.web_ui = web_ui
        self.control = control
        self.series = LabSeries()

    def totals(self) -> Totals | None:
        environment = getattr(self.web_ui, "environment", None)
        runner = getattr(environment, "runner", None)
        return locust_totals(runner.stats) if runner is not None else None

    def tools(self) -> list[dict[str, Any]]:
        """The Lab tools tab's rows: each tool's calls so far (`call_relay`'s records)."""
        collector = getattr(getattr(self.web_ui, "environment", None), "call_collector", None)
        return tool_rows(collector.calls) if collector is not None else []

    def failures(self, totals: Totals | None, utc_offset_min: int | None) -> list[dict[str, Any]]:
        if totals is None:
            return []
        spans = fault_spans(self.control.events)
        return self.series.failures_explained(totals, spans, utc_offset_min)

    def chart(self, utc_offset_min: int | None) -> dict[str, Any]:
        """The Lab chart's document: `traffic` (`[t_ms, requests, failures]` a second),
        `load` (`[t_ms, held calls, in flight]` a sample), the `faults`' spans and the
        `failures` explained."""
        now_s = time.time()
        totals = self.totals()
        return {
            "now_ms": round(now_s * 1000),
            "traffic": self.series.traffic(totals, now_s) if totals else [],
            "load": self.series.load_json(),
            "faults": [span.as_json() for span in fault_spans(self.control.events)],
            "failures": [f["sentence"] for f in self.failures(totals, utc_offset_min)],
        }


def explain_errors(errors: list[dict[str, Any]], explained: list[dict[str, Any]]) -> None:
    """Follow each error of Locust's Failures tab (its `/stats/requests` `errors`) with when
    and why it happened, from `LabSeries.failures_explained`."""
    why = {(f["kind"], f["error"]): f["why"] for f in explained}
    for error in errors:
        text = error_text(str(error.get("error", "")))
        reason = why.get((error.get("name"), text))
        if reason:
            error["error"] = f"{text} ({reason})"


def install(web_ui: Any, control: Control, *, sample_every_s: float | None = 1.0) -> None:
    """Add the lab's routes, tabs, chart and buttons to Locust's web UI (before it starts).

    With `sample_every_s`, a sampler feeds the Lab chart from then on (None: no sampler).
    """
    tab = _Tab(web_ui, control)
    if sample_every_s:
        sample_forever(tab.series, tab.totals, control.load, sample_every_s)
    lab = Blueprint("lab", __name__, url_prefix="/lab")

    @lab.get("/replicas")
    def replicas() -> Response:
        return jsonify(control.replicas())

    @lab.get("/events")
    def events() -> Response:
        return jsonify(timeline(control.events, _utc_offset_min()))

    @lab.get("/chart")
    def chart() -> Response:
        return jsonify(tab.chart(_utc_offset_min()))

    @lab.post("/faults/<fault>")
    def fault(fault: str) -> tuple[Response, int]:
        body = request.get_json(silent=True) or {}
        replica = body.get("replica") or request.values.get("replica") or None
        try:
            started = control.inject(fault, replica)
        except FaultRefused as refused:
            return jsonify({"error": str(refused)}), 409
        return jsonify(started), 202

    @lab.get("/tab.js")
    def script() -> Response:
        return Response(SCRIPT.read_text(), mimetype="application/javascript")

    app = web_ui.app
    app.register_blueprint(lab)

    @app.before_request
    def admit() -> tuple[Response, int] | None:
        """Refuse a request from another page or a rebound name (`caller`)."""
        headers = {name.lower(): value for name, value in request.headers.items()}
        why = caller.refusal(request.method, request.path, headers)
        return (jsonify({"error": f"Forbidden: {why}"}), 403) if why else None

    web_ui.template_args["extended_tabs"] = [
        {"title": "Lab", "key": "lab"},
        {"title": "Lab timeline", "key": "lab-timeline"},
        {"title": "Lab tools", "key": "lab-tools"},
    ]
    web_ui.template_args["extended_tables"] = [
        {"key": "lab", "structure": [{"key": k, "title": t} for k, t in REPLICA_COLUMNS]},
        {"key": "lab-timeline", "structure": [{"key": k, "title": t} for k, t in TIMELINE_COLUMNS]},
        {"key": "lab-tools", "structure": [{"key": k, "title": t} for k, t in TOOL_COLUMNS]},
    ]

    @app.after_request
    def extend(response: Response) -> Response:
        """Feed the lab's tables through the UI's poll, explain its failures, and load
        the tab's script."""
        if request.path == "/stats/requests" and response.is_json:
            offset = _utc_offset_min()
            document = response.get_json()
            document["extended_stats"] = [
                {"key": "lab", "data": control.replicas()},
                {"key": "lab-timeline", "data": timeline(control.events, offset)[::-1]},
                {"key": "lab-tools", "data": tab.tools()},
            ]
            explain_errors(document.get("errors") or [], tab.failures(tab.totals(), offset))
            response.set_data(json.dumps(document))
        elif request.path == "/" and response.mimetype == "text/html":
            page = response.get_data(as_text=True)
            tag = '<script src="./lab/tab.js" defer></script>'
            response.set_data(page.replace("</body>", f"{tag}</body>", 1))
        return response

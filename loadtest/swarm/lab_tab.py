"""The lab's own tab in Locust's web UI: the replicas, the faults, and when they happened.

Built on Locust's extension points: the web UI's Flask app gets a blueprint with the
lab's routes, and the UI's `extended_tabs` / `extended_tables` show two extra tabs, fed
through the `extended_stats` of the UI's own `/stats/requests` poll:

    Lab            one row per replica: version, health, balancer state, requests it served
                   since it started (`/metrics`), the swarm's requests it answered and
                   their share, requests in flight and calls held (`/healthz`)
    Lab timeline   every fault and cluster event, seconds since the swarm started

A small script (`lab_tab.js`) adds the fault buttons under the Lab tab. Routes:

    GET  /lab/replicas             JSON list, each with `id` and `version`
    GET  /lab/events               the timeline, JSON
    POST /lab/faults/<fault>       rolling-upgrade, crash, restart, redis-outage;
                                   optional `replica` (form, JSON or query); 202 when
                                   started, 409 when refused (busy, or faults come from
                                   the operator of a `--target` endpoint)
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Protocol

from flask import Blueprint, Response, jsonify, request

from loadtest.swarm.lab_control import FaultRefused

SCRIPT = Path(__file__).with_name("lab_tab.js")
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
TIMELINE_COLUMNS = [("t", "t (s)"), ("event", "Event"), ("detail", "Detail")]


class Control(Protocol):
    """What the tab needs from the lab's control (`loadtest.swarm.lab_control`)."""

    @property
    def events(self) -> list[dict[str, Any]]: ...

    def replicas(self) -> list[dict[str, Any]]: ...

    def inject(self, fault: str, replica: str | None = None) -> dict[str, Any]: ...


def timeline(events: list[dict[str, Any]], since: float) -> list[dict[str, Any]]:
    """The events as table rows: seconds since `since`, the event, its details in one line."""
    rows = []
    for event in events:
        detail = ", ".join(f"{k}={v}" for k, v in event.items() if k not in ("t", "event"))
        rows.append({"t": round(event["t"] - since, 1), "event": event["event"], "detail": detail})
    return rows


def install(web_ui: Any, control: Control, started: float | None = None) -> None:
    """Add the lab's routes, tabs and buttons to Locust's web UI (before it starts)."""
    since = started or time.time()
    lab = Blueprint("lab", __name__, url_prefix="/lab")

    @lab.get("/replicas")
    def replicas() -> Response:
        return jsonify(control.replicas())

    @lab.get("/events")
    def events() -> Response:
        return jsonify(timeline(control.events, since))

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
    web_ui.template_args["extended_tabs"] = [
        {"title": "Lab", "key": "lab"},
        {"title": "Lab timeline", "key": "lab-timeline"},
    ]
    web_ui.template_args["extended_tables"] = [
        {"key": "lab", "structure": [{"key": k, "title": t} for k, t in REPLICA_COLUMNS]},
        {"key": "lab-timeline", "structure": [{"key": k, "title": t} for k, t in TIMELINE_COLUMNS]},
    ]

    @app.after_request
    def extend(response: Response) -> Response:
        """Feed the lab's tables through the UI's poll, and load the buttons' script."""
        if request.path == "/stats/requests" and response.is_json:
            document = response.get_json()
            document["extended_stats"] = [
                {"key": "lab", "data": control.replicas()},
                {"key": "lab-timeline", "data": timeline(control.events, since)[::-1]},
            ]
            response.set_data(json.dumps(document))
        elif request.path == "/" and response.mimetype == "text/html":
            page = response.get_data(as_text=True)
            tag = '<script src="./lab/tab.js" defer></script>'
            response.set_data(page.replace("</body>", f"{tag}</body>", 1))
        return response

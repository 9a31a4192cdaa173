"""The Lab tab's routes over the soak's cluster, served as the swarm's web UI serves them
(on 127.0.0.1, with its rules on who may call: `loadtest.labtab.caller`), without a
swarm: what the cross-origin attack (`loadtest.soak.cross_origin`) posts its forms to.

Its faults are real: a forged `POST /lab/faults/crash` that got through would crash a
replica of the cluster the legitimate users are calling.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from flask import Flask
from werkzeug.serving import WSGIRequestHandler, make_server

from loadtest.harness.cluster import Cluster
from loadtest.labtab import tab
from loadtest.labtab.control import ClusterControl


class _Unlogged(WSGIRequestHandler):
    """A request handler that logs nothing (the soak's report counts the answers)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return None


class LabDoor:
    """The Lab's routes for `cluster` on a free port of 127.0.0.1, served by a thread from
    `with` to its end."""

    def __init__(self, cluster: Cluster) -> None:
        app = Flask("lab")

        @app.get("/stats/requests")
        def stats() -> dict[str, Any]:
            """Locust's poll, which carries the Lab's tables."""
            return {"stats": [], "errors": []}

        tab.install(
            SimpleNamespace(app=app, template_args={}), ClusterControl(cluster), sample_every_s=None
        )
        self.server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_Unlogged)
        self.port = self.server.server_port
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LabDoor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self._thread.join(timeout=5)
        self.server.server_close()

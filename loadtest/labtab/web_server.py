"""The HTTP server of the swarm's web UI: Locust's gevent WSGI server, with a deadline on
each request's head.

gevent's WSGI server waits for a request line and headers as long as the client likes: a
page of half-sent heads holds its sockets for ever. Here each head (request line and
headers) must be complete within `HEAD_TIMEOUT_S` of the moment the server starts reading
it, however the bytes trickle in; a connection kept open between requests waits for its
next head under the same deadline. A head past it is dropped and its connection closed.
The body and the answer are the application's, as before.
"""

from __future__ import annotations

import logging
from typing import Any

import gevent
from gevent import pywsgi

#: Seconds a client has to send a whole request head (as the lab's server gives, 10 s).
HEAD_TIMEOUT_S = 10.0

logger = logging.getLogger(__name__)


class HeadDeadlineHandler(pywsgi.WSGIHandler):
    """gevent's WSGI handler whose request heads end within the server's `head_timeout_s`."""

    _head_deadline: gevent.Timeout | None = None

    def read_requestline(self) -> str:
        seconds = getattr(self.server, "head_timeout_s", HEAD_TIMEOUT_S)
        late = TimeoutError(f"request head not complete within {seconds:g} s")
        self._head_deadline = gevent.Timeout.start_new(seconds, late)
        return str(super().read_requestline())

    def read_request(self, raw_requestline: str) -> Any:
        try:
            return super().read_request(raw_requestline)
        finally:
            self._end_head()

    def handle_one_request(self) -> Any:
        try:
            return super().handle_one_request()
        finally:
            self._end_head()

    def _end_head(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.close()
            self._head_deadline = None


def head_deadline_server(
    host: str, port: int, app: Any, head_timeout_s: float = HEAD_TIMEOUT_S
) -> pywsgi.WSGIServer:
    """A WSGI server for `app` on `host:port` whose request heads have a deadline."""
    server = pywsgi.WSGIServer(
        (host, port), app, log=None, error_log=logger, handler_class=HeadDeadlineHandler
    )
    server.head_timeout_s = head_timeout_s
    return server


def serve_with_head_deadline(web_ui: Any, head_timeout_s: float = HEAD_TIMEOUT_S) -> None:
    """Have Locust's web UI (not yet started, plain HTTP) serve with a deadline on heads."""

    def start_server() -> None:
        web_ui.server = head_deadline_server(web_ui.host, web_ui.port, web_ui.app, head_timeout_s)
        web_ui.server.serve_forever()

    web_ui.start_server = start_server

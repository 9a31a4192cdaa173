"""The doctor and the swarm's users time out a server that trickles its reply: each read
comes in time, the whole reply does not, and the failure names the server.

Against the hostile server's `trickle` mode (its reply's head, then a byte every half
second), with deadlines of a second or two.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from loadtest.doctor.deployment import Deployment
from loadtest.doctor.settings import Examination
from loadtest.target import Auth
from server.client import Exchange

pytestmark = pytest.mark.integration


#: The hostile server in a process of its own: Locust's gevent, imported here, would
#: otherwise run its thread as a greenlet of this one.
SERVE = (
    "import sys, time\n"
    "from tests.loadtest.hostile_server import hostile_server\n"
    "with hostile_server() as base:\n"
    "    print(base, flush=True)\n"
    "    sys.stdin.read()\n"
)


@pytest.fixture(scope="module")
def trickling() -> Iterator[str]:
    """The base URL of a server whose every reply trickles."""
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base = server.stdout.readline().strip()
        assert base.startswith("http://"), "the hostile server did not start"
        yield f"{base}/trickle"
    finally:
        server.kill()
        server.wait(timeout=10)


def test_the_doctor_times_out_a_whole_reply_and_names_the_server(trickling: str) -> None:
    url = f"{trickling}/mcp"
    settings = Examination(request_timeout_s=1.0, think_time_s=0.5)
    deployment = Deployment(replicas=[url], balancer=None, auth=Auth(), settings=settings)
    started = time.monotonic()
    seen = deployment.send(url, Exchange("tools/list", {}, {}))
    waited_s = time.monotonic() - started
    assert seen.status == 0
    assert "did not finish its reply within 1.5 s" in seen.transport_error
    assert trickling.removeprefix("http://").split("/")[0] in seen.transport_error
    assert waited_s < 5  # the deadline, not the reply's minutes of bytes


#: A swarm user's post to the trickling server, in a process of its own: importing Locust
#: monkey-patches the interpreter with gevent, which the test session must not be.
SWARM_USER_POST = """
import json, sys, time
import locust
from locust.contrib.fasthttp import FastHttpSession
from locust.env import Environment
from loadtest.swarm.user_http import UserHttp
from server.client import Exchange

environment = Environment(user_classes=[], events=locust.events)
client = FastHttpSession(
    sys.argv[1], environment.events.request, None, network_timeout=1.0, connection_timeout=1.0
)
http = UserHttp(client, {}, reply_deadline_s=1.5)
headers, body = Exchange("tools/list", {}, {}).next_request()
started = time.monotonic()
reply = http.post(headers, body)
waited_s = time.monotonic() - started
print(json.dumps({"status": reply.status, "error": http.transport_error, "waited_s": waited_s}))
"""


def test_a_swarm_user_times_out_a_whole_reply_and_names_the_server(trickling: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SWARM_USER_POST, trickling],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["status"] == 0
    assert "did not finish its reply within 1.5 s" in seen["error"]
    assert trickling in seen["error"]
    assert seen["waited_s"] < 5

"""A replica started with no flags at all is safe: each default cap and refusal holds.

The replica is `python -m server --port P`, nothing else, with no `MRTR_*` variable set:
the public development key and secret, as a laptop demo runs. Each test acts as its own
principal (a token signed with that secret), so the caps of one do not touch another's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from server.client import accept
from server.config import ServerConfig
from server.harness.process import ChildProcess, free_port, wait_until_healthy
from server.keys import DEV_JWT_SECRET
from server.protocol.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, TOO_MANY_REQUESTS
from server.transport.auth import mint_token
from tests.server.conftest import LEGACY_INITIALIZE
from tests.server.tasks_fixtures import RpcFailed, Wire
from tests.server.test_bad_input import META, headers

ECHO_TASK = {"name": "echo", "arguments": {}, "task": {"ttl": 60_000}}
#: What a replica allows when told nothing: each must be a limit, not "no limit" (0).
DEFAULT = {field.name: field.default for field in dataclasses.fields(ServerConfig)}
RATE = DEFAULT["requests_per_s_per_principal"]
SESSIONS = DEFAULT["max_sessions_per_principal"]
TASKS = DEFAULT["max_tasks_per_principal"]
HELD = DEFAULT["max_held_calls_per_principal"]


def test_every_per_principal_cap_is_on_by_default() -> None:
    assert min(RATE, SESSIONS, TASKS, HELD) > 0


class BareReplica(ChildProcess):
    """`python -m server` with a port and nothing else."""

    def __init__(self, *flags: str) -> None:
        self.port = free_port()
        self.flags = flags
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def start(self, env: dict[str, str]) -> BareReplica:
        command = [sys.executable, "-m", "server", "--port", str(self.port), *self.flags]
        self.process = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_until_healthy(f"http://127.0.0.1:{self.port}/healthz", 20, self.process)
        except Exception:
            self.stop()
            raise
        return self


def no_secrets() -> dict[str, str]:
    secrets = ("MRTR_STATE_KEYS", "MRTR_JWT_SECRET", "MRTR_METRICS_TOKEN")
    env = {k: v for k, v in os.environ.items() if k not in secrets}
    return {**env, "PYTHONWARNINGS": "ignore"}


@pytest.fixture(scope="module")
def replica() -> Iterator[BareReplica]:
    process = BareReplica().start(no_secrets())
    yield process
    process.stop()


def bearer(principal: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint_token(principal, DEV_JWT_SECRET, ttl_s=600)}"}


def wire(replica: BareReplica, principal: str) -> Wire:
    return Wire([replica.url], token=mint_token(principal, DEV_JWT_SECRET, ttl_s=600))


def refused(call: Any) -> RpcFailed:
    with pytest.raises(RpcFailed) as caught:
        call()
    return caught.value


def discover_body(rid: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "server/discover", "params": {"_meta": META}}


@pytest.mark.integration
def test_a_principal_beyond_the_default_rate_gets_429(replica: BareReplica) -> None:
    # Pipelined on one socket, so the requests come as fast as the replica reads them.
    body = json.dumps(discover_body(1)).encode()
    head = "".join(
        f"{k}: {v}\r\n" for k, v in {**headers("server/discover"), **bearer("rate")}.items()
    )
    request = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(body)}\r\n\r\n"
    answers = b""
    with socket.create_connection(("127.0.0.1", replica.port), timeout=30) as sock:
        sock.sendall((request.encode() + body) * int(5 * RATE))
        while answers.count(b"HTTP/1.1 ") < int(5 * RATE):
            answers += sock.recv(1 << 16)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3})", answers)
    assert statuses.count(b"200") >= 2 * RATE  # a burst of twice the rate, then the rate
    assert statuses.count(b"429") >= RATE
    assert b"retry-after: " in answers.lower() and b'"code":-32029' in answers


@pytest.mark.integration
def test_a_principal_opens_at_most_its_default_of_sessions(replica: BareReplica) -> None:
    with httpx.Client(timeout=10) as http:
        opened = [
            http.post(replica.url, json=LEGACY_INITIALIZE, headers=bearer("sessions"))
            for _ in range(SESSIONS + 1)
        ]
    assert [r.status_code for r in opened] == [200] * SESSIONS + [429]
    assert opened[-1].json()["error"]["data"] == {"limit": SESSIONS}


@pytest.mark.integration
def test_a_principal_keeps_at_most_its_default_of_tasks(replica: BareReplica) -> None:
    tasks = wire(replica, "tasks")
    for _ in range(TASKS):
        tasks("tools/call", ECHO_TASK)
    over = refused(lambda: tasks("tools/call", ECHO_TASK))
    assert (over.code, over.http_status, over.data) == (TOO_MANY_REQUESTS, 429, {"limit": TASKS})


@pytest.mark.integration
def test_a_principal_holds_at_most_its_default_of_legacy_calls(replica: BareReplica) -> None:
    weather = {"name": "get_weather", "arguments": {"location": "Oslo"}}
    with httpx.Client(timeout=10) as http, contextlib.ExitStack() as held:
        opened = http.post(replica.url, json=LEGACY_INITIALIZE, headers=bearer("held"))
        session = {**bearer("held"), "Mcp-Session-Id": opened.headers["mcp-session-id"]}

        def call(rid: int) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": weather}

        for rid in range(HELD):  # each waits for an answer that never comes
            stream = held.enter_context(
                http.stream("POST", replica.url, json=call(rid), headers=session)
            )
            assert stream.headers["content-type"].startswith("text/event-stream")
        over = http.post(replica.url, json=call(99), headers=session)
    assert over.status_code == 429 and over.json()["error"]["data"] == {"limit": HELD}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("clientInfo", {"name": "x", "title": "t" * DEFAULT["max_client_info_bytes"]}),
        ("capabilities", {"experimental": {"x": "y" * DEFAULT["max_client_capabilities_bytes"]}}),
    ],
)
def test_a_session_keeps_no_large_client_info_or_capabilities(
    replica: BareReplica, field: str, value: dict[str, Any]
) -> None:
    params = {**LEGACY_INITIALIZE["params"], field: value}
    body = {**LEGACY_INITIALIZE, "params": params}
    reply = httpx.post(replica.url, json=body, headers=bearer("large"), timeout=10)
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == INVALID_PARAMS
    assert reply.json()["error"]["message"].startswith(f"{field} is ")


@pytest.mark.integration
def test_a_task_keeps_no_large_arguments_or_answers(replica: BareReplica) -> None:
    tasks = wire(replica, "large-task")
    beyond = DEFAULT["max_task_arguments_bytes"]
    big = {**ECHO_TASK, "arguments": {"blob": "x" * beyond}}
    over = refused(lambda: tasks("tools/call", big))
    assert (over.code, over.http_status) == (INVALID_PARAMS, 413)
    assert "the task's arguments" in over.message
    task_id = tasks("tools/call", ECHO_TASK)["task"]["taskId"]
    tasks.poll(task_id, {"input_required"})
    answer = {"echo_input": accept(input="y" * beyond)}
    related = {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
    over = refused(
        lambda: tasks("tasks/input_response", {"inputResponses": answer, "_meta": related})
    )
    assert "the answers this task keeps" in over.message


@pytest.mark.integration
def test_a_token_cannot_claim_the_anonymous_principal(replica: BareReplica) -> None:
    sent = {**headers("server/discover"), **bearer("anonymous")}
    reply = httpx.post(replica.url, json=discover_body(1), headers=sent, timeout=10)
    assert reply.status_code == 401 and "reserved" in reply.json()["error"]["message"]


@pytest.mark.integration
def test_the_development_secret_serves_no_request_a_proxy_relays(replica: BareReplica) -> None:
    sent = {**headers("server/discover"), "X-Forwarded-For": "203.0.113.9"}
    reply = httpx.post(replica.url, json=discover_body(1), headers=sent, timeout=10)
    assert reply.status_code == 403
    assert "MRTR_JWT_SECRET" in reply.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/healthz", "/metrics"])
@pytest.mark.integration
def test_health_and_metrics_answer_only_this_machines_host(replica: BareReplica, path: str) -> None:
    url = f"http://127.0.0.1:{replica.port}{path}"
    assert httpx.get(url, headers={"Host": "evil.example"}, timeout=10).status_code == 403
    assert (
        httpx.get(url, headers={"Host": f"localhost:{replica.port}"}, timeout=10).status_code == 200
    )


@pytest.mark.integration
def test_a_key_given_twice_is_refused(replica: BareReplica) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather",'
        b'"name":"echo","arguments":{}}}'
    )
    reply = httpx.post(replica.url, content=body, headers=headers("tools/call", "echo"), timeout=10)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == INVALID_REQUEST
    assert "'name' appears twice" in reply.json()["error"]["message"]


@pytest.mark.integration
def test_a_made_up_task_id_is_not_found(replica: BareReplica) -> None:
    gone = refused(lambda: wire(replica, "ids")("tasks/get", {"taskId": "echo_1.e2"}))
    assert (gone.http_status, gone.message) == (200, "Task not found: echo_1.e2")


@pytest.mark.integration
def test_another_principals_state_is_refused_without_saying_whose(replica: BareReplica) -> None:
    arguments = {"workItemId": 1, "fields": {"System.State": "Resolved"}}
    call = {"name": "update_work_item", "arguments": arguments}
    alice = wire(replica, "alice")
    second = alice(
        "tools/call", {**call, "inputResponses": {"resolution": accept(resolution="Duplicate")}}
    )
    stolen = {**call, "requestState": second["requestState"]}
    error = refused(lambda: wire(replica, "bob")("tools/call", stolen))
    assert (error.message, error.data) == ("Invalid requestState", None)


def test_beyond_loopback_a_caller_needs_a_token() -> None:
    env = {**no_secrets(), "MRTR_JWT_SECRET": "s" * 32, "MRTR_STATE_KEYS": "k:" + "A" * 43 + "="}
    process = BareReplica("--host", "0.0.0.0").start(env)
    try:
        sent = headers("server/discover")
        anonymous = httpx.post(process.url, json=discover_body(1), headers=sent, timeout=10)
        assert anonymous.status_code == 401
        token = {"Authorization": f"Bearer {mint_token('carol', 's' * 32)}"}
        signed = httpx.post(process.url, json=discover_body(2), headers={**sent, **token})
        assert signed.status_code == 200
    finally:
        process.stop()

"""Attacks that wait on tasks: `tasks/result` on a working task, abandoned in waves or held
by many principals at once (run beside the soak's legitimate users by
`loadtest.soak.attacks`):

    abandoned-waits  `tasks/result` on a working task, each socket closed as soon as the
                     request is sent, in waves
    many-principals-waits
                     `sockets` principals, each with a working task of its own and four
                     `tasks/result` waits held on it (each within its own cap, together
                     over a replica's), every answered wait sent again

The principals' tokens are minted with the cluster's secret, handed to the attack in
`SECRET_ENV`: an attacker with the public development secret could mint as many.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from loadtest.soak.attacker import YES, connect, transport
from loadtest.soak.held_sockets import Report, hold
from server.client import SEED, Exchange, McpError, MrtrClient, task_capabilities
from server.harness.principals import user_token

#: Where the attack process finds the cluster's token secret.
SECRET_ENV = "LOADTEST_JWT_SECRET"
#: Seconds between two waves of abandoned waits: far less than the 30 s one wave held a
#: replica before waits noticed their clients leaving (so that then the replicas were
#: never free), and enough apart that the soak measures what the waits hold, not how
#: many requests a second this machine carries (a flood of connections from one address
#: is the edge's to bound).
WAVE_GAP_S = 5.0
#: Waits each principal holds: the replicas' cap per principal.
WAITS_PER_PRINCIPAL = 4
#: Principals whose working tasks are started at once.
PREPARING_THREADS = 16


def raw_request(
    method: str, params: dict[str, Any], capabilities: dict[str, Any], token: str | None = None
) -> bytes:
    """One whole 2026-07-28 request for a raw socket: its head and JSON body."""
    headers, body = Exchange(method, params, capabilities, token=token).next_request()
    data = json.dumps(body).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(data)}\r\n\r\n"
    ).encode() + data


def working_task(url: str, token: str | None = None) -> str:
    """A `provision_vm` task of the attacker's (or of `token`'s principal) that stays
    working for a minute."""
    params = {
        "name": "provision_vm",
        "arguments": {"name": "decoy", "seconds": 60},
        "task": {"ttl": 120_000},
    }
    capabilities = task_capabilities(YES.capabilities(), SEED)
    exchange = Exchange("tools/call", params, capabilities, token=token)
    with MrtrClient(url, handlers=YES, transport=transport()) as client:
        result = client.run(exchange).result or {}
    return str(result["task"]["taskId"])


def abandoned_waits(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """Waves of `sockets` `tasks/result` requests on a working task, each left at once."""
    url = f"http://{host}:{port}/mcp"
    capabilities = task_capabilities(YES.capabilities(), SEED)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            request = raw_request("tasks/result", {"taskId": working_task(url)}, capabilities)
        except (McpError, httpx.HTTPError, KeyError):
            report.answers["no task"] += 1
            time.sleep(WAVE_GAP_S)
            continue
        for _ in range(sockets):
            if time.monotonic() >= deadline:
                break
            with contextlib.suppress(OSError), connect(host, port, None) as sock:
                sock.sendall(request)
                report.sent += 1
                report.answers["left"] += 1
        time.sleep(WAVE_GAP_S)


def many_principals_waits(
    host: str, port: int, seconds: float, sockets: int, report: Report
) -> None:
    """`sockets` principals, each holding `WAITS_PER_PRINCIPAL` `tasks/result` waits on a
    working task of its own; each wait answered is sent again for `seconds` from when
    every task is started (a few a second on a loaded machine: the attack's preparation)."""
    url = f"http://{host}:{port}/mcp"
    secret = os.environ[SECRET_ENV]
    capabilities = task_capabilities(YES.capabilities(), SEED)
    lock = threading.Lock()

    def prepare(index: int) -> bytes | None:
        token = user_token(secret, f"mallory-{index}")
        try:
            task_id = working_task(url, token)
        except (McpError, httpx.HTTPError, KeyError):
            with lock:
                report.answers["no task"] += 1
            return None
        return raw_request("tasks/result", {"taskId": task_id}, capabilities, token)

    with ThreadPoolExecutor(PREPARING_THREADS) as pool:
        waits = [wait for wait in pool.map(prepare, range(sockets)) if wait is not None]
    report.ready()
    if waits:
        hold(
            host,
            port,
            seconds,
            len(waits) * WAITS_PER_PRINCIPAL,
            report,
            lambda index: waits[index // WAITS_PER_PRINCIPAL],
        )

"""The limits a caller meets at the way in (the balancer, else the first replica), probed
cheaply and each bounded in time: how many requests
per second one principal may send, how large a body may be, and how many calls may be
open at once. What was seen is reported; a limit is no failure, only a fact to plan with.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from loadtest.doctor.deployment import Deployment
from loadtest.doctor.finding import Finding, not_checked, passed
from server.client import Exchange

#: Bodies tried, smallest first, until one is refused.
BODY_SIZES_BYTES = (64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024, 16 * 1024 * 1024)
#: Most requests the rate probe sends.
RATE_PROBE_REQUESTS = 300
#: Calls the concurrency probe opens at once.
CONCURRENT_CALLS = 24
#: HTTP statuses that say a limit was met.
REFUSALS = (413, 429, 503)


def _discover(
    deployment: Deployment, padding_bytes: int = 0
) -> tuple[dict[str, str], dict[str, Any]]:
    exchange = Exchange("server/discover", {}, {}, token=deployment.auth.token)
    headers, body = exchange.next_request()
    if padding_bytes:
        body["params"]["_meta"]["doctor/padding"] = "x" * padding_bytes
    return headers, body


def rate(deployment: Deployment) -> Finding:
    """`limit-rate`: `server/discover` requests one principal sends back to back, until
    refused or the probe's time is up."""
    name = "limit-rate"
    url = deployment.way_in
    headers, body = _discover(deployment)
    started = time.perf_counter()
    deadline = started + deployment.settings.limit_probe_s
    sent, refused_at = 0, None
    with deployment.http() as http:
        while sent < RATE_PROBE_REQUESTS and time.perf_counter() < deadline:
            status = http.post(url, json=body, headers=headers).status_code
            sent += 1
            if status in REFUSALS:
                refused_at = (sent, status)
                break
    spent_s = time.perf_counter() - started
    if refused_at:
        return passed(
            name,
            f"one principal was refused (HTTP {refused_at[1]}) at request {refused_at[0]}, "
            f"after {spent_s:.2f} s ({refused_at[0] / spent_s:.0f} requests/s)",
        )
    return passed(
        name,
        f"one principal sent {sent} requests in {spent_s:.2f} s "
        f"({sent / spent_s:.0f}/s) on one connection, none refused",
    )


def body_size(deployment: Deployment) -> Finding:
    """`limit-body`: the largest body accepted and the first refused."""
    name = "limit-body"
    url = deployment.way_in
    accepted = 0
    deadline = time.perf_counter() + deployment.settings.limit_probe_s
    with deployment.http() as http:
        for size in BODY_SIZES_BYTES:
            if time.perf_counter() > deadline:
                break
            headers, body = _discover(deployment, size)
            try:
                status = http.post(url, json=body, headers=headers).status_code
            except httpx.HTTPError as error:
                return passed(
                    name,
                    f"bodies up to {accepted} bytes accepted; {size} bytes cut: "
                    f"{type(error).__name__}",
                )
            if status >= 400:
                return passed(
                    name, f"bodies up to {accepted} bytes accepted; {size} bytes: HTTP {status}"
                )
            accepted = size
    return passed(name, f"bodies up to {accepted} bytes accepted, none refused")


def concurrent_calls(deployment: Deployment) -> Finding:
    """`limit-concurrency`: calls opened at once by one principal, and how many were met
    by a refusal."""
    name = "limit-concurrency"
    url = deployment.way_in
    if deployment.tool is None:
        return not_checked(name, "no tool of the deployment asks a question")
    with ThreadPoolExecutor(CONCURRENT_CALLS) as pool:
        rounds = list(pool.map(lambda _: deployment.start(url), range(CONCURRENT_CALLS)))
    refused = [r for r in rounds if not r.ok]
    if refused:
        return passed(
            name,
            f"{len(refused)} of {CONCURRENT_CALLS} calls opened at once were refused: "
            f"{refused[0].said()}",
        )
    return passed(name, f"{CONCURRENT_CALLS} calls opened at once were all served")

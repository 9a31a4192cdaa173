"""What the 2026-07-28 era needs the balancer to pass on untouched: `server/discover`, the
`Mcp-Method` and `Mcp-Name` headers a replica checks against the body, and the
protocol version in `_meta`.

Checks: `discover` (each URL answers `server/discover`) and `headers-through-balancer`
(a call whose `Mcp-Method` or `Mcp-Name` disagrees with its body is refused by a replica
that reads the header; through the balancer it must be refused too, or the balancer
dropped it).
"""

from __future__ import annotations

import httpx

from loadtest.doctor.deployment import Deployment, Round
from loadtest.doctor.finding import Finding, failed, not_checked, passed
from server.client import Exchange
from server.protocol.headers import METHOD_HEADER, NAME_HEADER
from server.protocol.versions import MODERN_VERSION

#: What a mismatched header says, each unlike the body it comes with.
MISMATCHED = {METHOD_HEADER: "tools/list", NAME_HEADER: "doctor-mismatched-name"}


def discover(deployment: Deployment) -> Finding:
    """`discover`: every URL answers `server/discover` (speaks 2026-07-28)."""
    name = "discover"
    silent = [
        f"{url}: {deployment.unreachable[url]}"
        if url in deployment.unreachable
        else f"{url}: speaks {', '.join(deployment.targets[url].eras)} alone"
        for url in deployment.urls
        if url in deployment.unreachable or MODERN_VERSION not in deployment.targets[url].eras
    ]
    if not silent:
        eras = {url: ", ".join(t.eras) for url, t in deployment.targets.items()}
        return passed(
            name,
            "server/discover answered at every URL: "
            + "; ".join(f"{url} speaks {spoken}" for url, spoken in eras.items()),
        )
    return failed(
        name,
        f"server/discover did not answer at {len(silent)} of {len(deployment.urls)} URLs: "
        + "; ".join(silent),
        "serve 2026-07-28 on every replica (an SDK release that speaks it) and let the "
        "balancer pass POST /mcp with its MCP-Protocol-Version header",
    )


def _mismatched(deployment: Deployment, url: str, header: str) -> Round:
    """A call whose `header` (Mcp-Method or Mcp-Name) disagrees with its body."""
    assert deployment.tool is not None
    exchange = Exchange(
        "tools/call",
        {"name": deployment.tool.name, "arguments": deployment.arguments()},
        {},
        token=deployment.auth.token,
    )
    headers, body = exchange.next_request()
    headers[header] = MISMATCHED[header]
    seen = Round(url, exchange, 0)
    try:
        with deployment.http() as http:
            seen.status = http.post(url, json=body, headers=headers).status_code
    except httpx.HTTPError as error:
        seen.transport_error = f"{type(error).__name__}: {error}"
    return seen


def through_balancer(deployment: Deployment) -> Finding:
    """`headers-through-balancer`: Mcp-Method, Mcp-Name and `_meta` reach the replicas."""
    name = "headers-through-balancer"
    if deployment.balancer is None:
        return not_checked(name, "no balancer given (--balancer URL)")
    if not deployment.speaks(MODERN_VERSION) or deployment.tool is None:
        return not_checked(name, "no 2026-07-28 tool call to send")
    call = deployment.start(deployment.balancer)
    if not call.ok:
        return failed(
            name,
            f"a call with Mcp-Method, Mcp-Name and the protocol version in _meta through "
            f"{deployment.balancer}: {call.said()}",
            "let the balancer pass the Mcp-Method, Mcp-Name and MCP-Protocol-Version "
            "headers and the body unchanged to the replicas",
        )
    seen = [f"a call through {deployment.balancer} answered ({call.said()})"]
    dropped, unchecked = [], []
    for header in MISMATCHED:
        through = _mismatched(deployment, deployment.balancer, header)
        answered = f"HTTP {through.status}" if through.status else through.transport_error
        seen.append(f"one whose {header} disagrees with its body: {answered}")
        if through.status >= 400:
            continue  # a replica read the header and refused the mismatch
        direct = [_mismatched(deployment, url, header) for url in deployment.replicas[:1]]
        if direct and direct[0].status >= 400:
            dropped.append(f"{header} (refused by {direct[0].url} itself, HTTP {direct[0].status})")
        else:
            unchecked.append(header)
    if dropped:
        return failed(
            name,
            "; ".join(seen) + "; the balancer does not pass on " + ", ".join(dropped),
            "let the balancer pass the Mcp-Method and Mcp-Name headers unchanged "
            "(no header rewriting or allow-list that drops them)",
        )
    if unchecked:
        seen.append(
            f"the replicas do not check {' or '.join(unchecked)} against the body, so "
            "whether it arrives cannot be told; calls with it went through"
        )
    else:
        seen.append("the replicas read both headers through the balancer")
    return passed(name, "; ".join(seen))

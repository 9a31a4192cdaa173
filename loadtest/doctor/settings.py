"""What an examination of a deployment is told: where its balancer is, which tool asks,
the think time its users take, and how long each probe may go on.

Each field is an option of `python -m loadtest doctor`, stated once (`server.flags.setting`).
"""

from __future__ import annotations

from dataclasses import dataclass

from server.flags import setting


@dataclass(frozen=True)
class Examination:
    """How the doctor examines a deployment: what it is told and what it may spend."""

    balancer: str | None = setting(
        None,
        metavar="URL",
        help="the MCP endpoint of the deployment's load balancer; the checks through a "
        "balancer run on it; without it, a lone URL is taken as the way in",
    )
    tool: str | None = setting(
        None,
        metavar="NAME",
        help="the tool whose calls ask a question; without it, the first tool (by name) "
        "whose call asks, each tried once",
    )
    think_time_s: float = setting(
        2.0,
        metavar="S",
        help="how long your users take to answer a question: a requestState must still "
        "open, and a held 2025-11-25 stream still live, after it",
    )
    ttl_probe_s: float = setting(
        0.0,
        metavar="S",
        help="the oldest a state is retried at to find how long it lives (its TTL), in "
        "ages doubling from the think time; 0: no older than the think time",
    )
    balancer_rounds: int = setting(
        10,
        metavar="N",
        help="calls started and retried through the balancer, each a fresh connection",
    )
    limit_probe_s: float = setting(
        3.0,
        metavar="S",
        help="longest time each limit probe (rate, body size, concurrent calls) goes on",
    )
    request_timeout_s: float = setting(
        15.0, metavar="S", help="longest wait for one request of the doctor's"
    )

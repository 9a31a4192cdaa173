"""A rolling upgrade, replica by replica, the way an operator (or Kubernetes) does it.

For each replica: drain it in HAProxy (no new sessions; sticky clients still reach it),
wait until it holds no sessions or the drain timeout passes, stop it (whatever it still
holds is cut), start its successor with tool version 2 and the rotated state keys, wait
until it is healthy, and put it back in rotation.

Under MRTR the drain is instant (nothing is held between rounds). Under sticky routing
or SSE + store, a replica holds a stream for every user who is still thinking, so the
drain waits, and a drain timeout shorter than the think time cuts calls.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from loadtest.harness.cluster import Cluster


def still_open(cluster: Cluster, name: str) -> tuple[int, int]:
    """What a draining replica still has: the connections HAProxy keeps to it (idle
    keep-alives among them) and the requests it reports in flight (each held stream among
    them, counted once). Stopping it cuts the requests."""
    health = cluster.health(name)
    return cluster.api.sessions(name), int(health.get("in_flight", 0))


def rolling_upgrade(
    cluster: Cluster,
    *,
    drain_timeout_s: float,
    tool_version: int = 2,
    rotate_keys: bool = True,
    poll_s: float = 0.05,
) -> list[dict[str, Any]]:
    """Upgrade every replica in turn; returns one record per replica."""
    records = []
    cluster.log("upgrade start", drain_timeout_s=drain_timeout_s)
    for name in cluster.names:
        started = time.monotonic()
        cluster.api.drain(name)
        cluster.log("drain", replica=name)
        deadline = started + drain_timeout_s
        while any(open_now := still_open(cluster, name)) and time.monotonic() < deadline:
            time.sleep(poll_s)
        drained_s = time.monotonic() - started
        connections, remaining = open_now
        cluster.log(
            "stop",
            replica=name,
            still_held=remaining,
            connections=connections,
            drained_s=round(drained_s, 3),
        )
        cluster.replace(name, tool_version=tool_version, rotated_keys=rotate_keys)
        cluster.api.ready(name)
        cluster.wait_up(name)
        cluster.log("ready", replica=name, tool_version=tool_version)
        records.append(
            {
                "replica": name,
                "drained_s": drained_s,
                "cut_requests": remaining,
                "total_s": time.monotonic() - started,
            }
        )
    cluster.log("upgrade done")
    return records


def restart_s(faults: list[dict[str, Any]]) -> float:
    """Mean time from stopping a replica to its successor being ready, from the events."""
    stops = [e["t"] for e in faults if e["event"] == "stop"]
    readies = [e["t"] for e in faults if e["event"] == "ready"]
    gaps = [ready - stop for stop, ready in zip(stops, readies, strict=False)]
    return statistics.fmean(gaps) if gaps else 0.0

"""A deployment doctor: what a multi-replica MCP deployment needs for MRTR, checked from
outside, each check passed or failed with its evidence and the fix.

`diagnose(urls, auth, settings)` examines the replicas at `urls` (and the balancer the
settings name) and returns the `Report`: requestState across replicas and through the
balancer (`state.py`), the 2025-11-25 era's affinity and held streams
(`held_stream.py`), the headers and `server/discover` (`headers.py`), the limits a caller
meets (`limits.py`).
"""

from __future__ import annotations

from loadtest.doctor import headers, held_stream, limits, state
from loadtest.doctor.deployment import Deployment
from loadtest.doctor.discovery import examine
from loadtest.doctor.finding import Finding
from loadtest.doctor.report import Report
from loadtest.doctor.settings import Examination
from loadtest.target import Auth, Workload

#: The checks in the order they run; the limits last, as a rate limit met there would
#: refuse the checks after it.
CHECKS = (
    headers.discover,
    state.across_replicas,
    state.through_balancer,
    state.bound_to_caller,
    state.lifetime,
    headers.through_balancer,
    held_stream.affinity,
    held_stream.idle_stream,
    limits.body_size,
    limits.concurrent_calls,
    limits.rate,
)


def diagnose(
    urls: list[str], auth: Auth, settings: Examination, workload: Workload | None = None
) -> Report:
    """The examination of the deployment at `urls` (its tools called with the workload
    file's arguments and answers, where one is given): every check's finding."""
    deployment = examine(urls, auth, settings, workload)
    return Report(tuple(check(deployment) for check in CHECKS))


__all__ = ["CHECKS", "Deployment", "Examination", "Finding", "Report", "diagnose"]

"""The deployment as the doctor finds it: each URL discovered once (its eras, tools and
server name), and the tool whose calls the checks make: one whose call carries a
requestState where one does, else one that asks.
"""

from __future__ import annotations

from loadtest.doctor.deployment import SEALED_ATTEMPTS, Deployment
from loadtest.doctor.held_stream import legacy_call
from loadtest.doctor.settings import Examination
from loadtest.target import Auth, TargetError, TargetTool, Workload, check_workload, discover
from server.protocol.versions import LEGACY_VERSION, MODERN_VERSION

#: Calls of each tool tried first, before more calls of every tool.
FIRST_ATTEMPTS = 2


def examine(
    replicas: list[str], auth: Auth, settings: Examination, workload: Workload | None = None
) -> Deployment:
    """The deployment at `replicas` (and the settings' balancer), each URL discovered and
    the tool that asks chosen; a `TargetError` when none of them is an MCP server."""
    replicas = [url for url in replicas if url != settings.balancer]
    deployment = Deployment(list(replicas), settings.balancer, auth, settings, workload=workload)
    for url in deployment.urls:
        try:
            deployment.targets[url] = discover(url, auth)
        except TargetError as error:
            deployment.unreachable[url] = str(error)
    if not deployment.targets:
        raise TargetError("; ".join(deployment.unreachable.values()))
    if workload is not None:
        check_workload(workload, next(iter(deployment.targets.values())))
    deployment.tool = _asking_tool(deployment)
    return deployment


def _asking_tool(deployment: Deployment) -> TargetTool | None:
    """The tool `--tool` names, or the first (by name) whose call carries a `requestState`
    (2026-07-28), else the first whose call asks a question (on its first round, or on
    its stream when 2025-11-25 alone is spoken), tried at the first URL: a few calls of
    each tool first, then more (their arguments may decide whether they ask)."""
    target = next(iter(deployment.targets.values()))
    if deployment.settings.tool:
        return target.tool(deployment.settings.tool)
    url = next(iter(deployment.targets))
    if MODERN_VERSION not in target.eras:
        for name in sorted(target.tools):
            deployment.tool = target.tools[name]
            if LEGACY_VERSION in target.eras and _asks_on_stream(deployment, url):
                return deployment.tool
        return None
    usable = dict(target.tools)
    for attempts in (FIRST_ATTEMPTS, SEALED_ATTEMPTS):
        for name in sorted(usable):
            deployment.tool = usable[name]
            try:
                if deployment.start_sealed(url, attempts=attempts) is not None:
                    return deployment.tool
            except TargetError:
                del usable[name]  # a schema nothing can be drawn from: not one to call
    for name in sorted(usable):
        deployment.tool = usable[name]
        if deployment.start(url).asked:
            return deployment.tool
    return None


def _asks_on_stream(deployment: Deployment, url: str) -> bool:
    """Whether a 2025-11-25 call of the current tool asks the user something."""
    return legacy_call(deployment, url, url, think_time_s=0.0).asked

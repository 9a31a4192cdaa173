"""The deployment as the doctor finds it: each URL discovered once (its eras, tools and
server name), and the tool whose calls the checks make: one whose call carries a
requestState where one does, else one that asks.
"""

from __future__ import annotations

from loadtest.doctor.deployment import SEALED_ATTEMPTS, Deployment
from loadtest.doctor.held_stream import legacy_call
from loadtest.doctor.settings import Examination
from loadtest.target import Auth, TargetError, TargetTool, discover
from server.protocol.versions import LEGACY_VERSION, MODERN_VERSION


def examine(replicas: list[str], auth: Auth, settings: Examination) -> Deployment:
    """The deployment at `replicas` (and the settings' balancer), each URL discovered and
    the tool that asks chosen; a `TargetError` when none of them is an MCP server."""
    replicas = [url for url in replicas if url != settings.balancer]
    deployment = Deployment(list(replicas), settings.balancer, auth, settings)
    for url in deployment.urls:
        try:
            deployment.targets[url] = discover(url, auth)
        except TargetError as error:
            deployment.unreachable[url] = str(error)
    if not deployment.targets:
        raise TargetError("; ".join(deployment.unreachable.values()))
    deployment.tool = _asking_tool(deployment)
    return deployment


def _asking_tool(deployment: Deployment) -> TargetTool | None:
    """The tool `--tool` names, or the first (by name) whose call carries a `requestState`
    (2026-07-28), else the first whose call asks a question (on its first round, or on
    its stream when 2025-11-25 alone is spoken), tried at the first URL: one call of each
    tool first, then more calls of those that asked (their arguments may decide)."""
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
    asking: list[TargetTool] = []
    for name in sorted(target.tools):
        deployment.tool = target.tools[name]
        try:
            first = deployment.start(url)
            if first.asked:
                asking.append(deployment.tool)
                if deployment.start_sealed(url, attempts=1) is not None:
                    return deployment.tool
        except TargetError:
            continue  # a schema nothing can be drawn from: not a tool to examine with
    for tool in asking:
        deployment.tool = tool
        if deployment.start_sealed(url, attempts=SEALED_ATTEMPTS - 1) is not None:
            return tool
    deployment.tool = asking[0] if asking else None
    return deployment.tool


def _asks_on_stream(deployment: Deployment, url: str) -> bool:
    """Whether a 2025-11-25 call of the current tool asks the user something."""
    return legacy_call(deployment, url, url, think_time_s=0.0).asked

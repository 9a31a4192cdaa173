"""Named scenarios: the deployment's defaults plus one fault, ready to compare.

`build(name, **overrides)` returns the `SimParams` of a scenario; overrides
name any parameter by field alone (`replicas=8`, `drain_timeout_s=300`,
`sse_keepalive_s=15`), including the fault's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labsim.model.autoscale import Autoscaler
from labsim.model.checks import ParameterError
from labsim.model.demand import WorkloadParams
from labsim.model.deployment import ClusterParams, TaskParams
from labsim.model.faults import Fault, LoadSpike, ReplicaCrash, RollingUpgrade, StoreOutage
from labsim.model.params import SimParams


def _steady() -> SimParams:
    return SimParams()


def _crash() -> SimParams:
    return SimParams(faults=(ReplicaCrash(),))


def _store_outage() -> SimParams:
    return SimParams(faults=(StoreOutage(),))


def _rolling_upgrade() -> SimParams:
    return SimParams(faults=(RollingUpgrade(),))


def _overload() -> SimParams:
    return SimParams(cluster=ClusterParams(shed_policy="mrtr-offload"), faults=(LoadSpike(),))


def _autoscale() -> SimParams:
    # Load triples for a quarter of an hour, then falls back; users come in sessions of
    # several calls, so a sticky cookie keeps each session on its first replica.
    workload = WorkloadParams(
        arrival_rate_per_s=16.0,
        rate_profile=((0.0, 1.0), (600.0, 3.0), (1500.0, 1.0)),
        calls_per_session=5.0,
        session_s=600.0,
    )
    return SimParams(
        workload=workload,
        cluster=ClusterParams(replicas=2),
        autoscaler=Autoscaler(),
        horizon_s=2700.0,
        warmup_s=300.0,
        sample_every_s=15.0,
    )


def _idle_timeout() -> SimParams:
    return SimParams(cluster=ClusterParams(sse_keepalive_s=0.0))


# assumption: one call in five is to a persistent tool (long work, like provision_vm).
PERSISTENT_SHARE = 0.2


def _persistent(*faults: Fault) -> Callable[[], SimParams]:
    def build() -> SimParams:
        return SimParams(tasks=TaskParams(persistent_share=PERSISTENT_SHARE), faults=faults)

    return build


SCENARIOS: dict[str, tuple[str, Callable[[], SimParams]]] = {
    "steady": ("steady state: no fault", _steady),
    "crash": ("replica 0 crashes at 450 s and restarts 30 s later", _crash),
    "store-outage": ("the shared store is down from 450 s to 510 s", _store_outage),
    "rolling-upgrade": (
        "from 400 s each replica drains (30 s timeout), restarts (15 s) with tool v2",
        _rolling_upgrade,
    ),
    "overload": (
        "15x arrivals for 60 s from 450 s; MRTR offloads, the legacy ones answer 503",
        _overload,
    ),
    "idle-timeout": ("no SSE keep-alives: the load balancer cuts streams idle 60 s", _idle_timeout),
    "persistent": ("a fifth of the calls run as tasks (60 s of work) in the store", _persistent()),
    "persistent-crash": (
        "persistent, and replica 0 crashes at 450 s (its tasks are taken over)",
        _persistent(ReplicaCrash()),
    ),
    "persistent-store-outage": (
        "persistent, and the store is down from 450 s to 510 s",
        _persistent(StoreOutage()),
    ),
    "autoscale": (
        "CPU target tracking (2-20 replicas) while load triples from 600 s to 1500 s; "
        "sessions of 5 calls",
        _autoscale,
    ),
}


def build(name: str, **overrides: Any) -> SimParams:
    """The parameters of scenario `name`, with `overrides` applied by field name or path
    (`connection_limit=64`, or `**{"cluster.connection_limit": 64}`)."""
    if name not in SCENARIOS:
        raise ParameterError(f"unknown scenario {name!r}; choose from {', '.join(SCENARIOS)}")
    params = SCENARIOS[name][1]()
    return params.with_settings(overrides) if overrides else params


def describe(name: str) -> str:
    """One line saying what happens in scenario `name`."""
    if name not in SCENARIOS:
        raise ParameterError(f"unknown scenario {name!r}; choose from {', '.join(SCENARIOS)}")
    return SCENARIOS[name][0]

"""labsim: SimPy models of three ways an MCP server asks a user for input, at scale.

SSE + shared store, a sticky load balancer, and Multi Round-Trip Requests
(MRTR) run the same workload on the same cluster, so the differences in
latency, memory held, failures and cost are the architectures'. The models are
checked against queueing theory (`labsim.validation`).

    >>> import labsim
    >>> params = labsim.scenarios.build("crash", replicas=8)
    >>> result = labsim.simulate(params, "mrtr", seed=1)
    >>> result.summary["lost"]
    0

The public API:

- `simulate(params, architecture, seed) -> RunResult` with `.calls`,
  `.timeline`, `.events` (DataFrames) and `.summary` (dict);
- `compare(scenario, replications, ...) -> DataFrame` and `sweep(...)`;
- `scenarios.build(name, **overrides) -> SimParams`;
- the parameter dataclasses, `ParameterError`, and `ARCHITECTURES`.
"""

from labsim import scenarios
from labsim.experiments import compare, replicate, sweep
from labsim.faults import LoadSpike, ReplicaCrash, RollingUpgrade, StoreOutage
from labsim.metrics import RunResult, littles_law
from labsim.params import (
    ClientParams,
    ClusterParams,
    CostParams,
    ParameterError,
    ServiceTime,
    SimParams,
    StateParams,
    StoreParams,
    WorkloadParams,
)
from labsim.simulation import ARCHITECTURES, simulate

__all__ = [
    "ARCHITECTURES",
    "ClientParams",
    "ClusterParams",
    "CostParams",
    "LoadSpike",
    "ParameterError",
    "ReplicaCrash",
    "RollingUpgrade",
    "RunResult",
    "ServiceTime",
    "SimParams",
    "StateParams",
    "StoreOutage",
    "StoreParams",
    "WorkloadParams",
    "compare",
    "littles_law",
    "replicate",
    "scenarios",
    "simulate",
    "sweep",
]

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
- `persistent_sweep.share_sweep(...)`: the share of calls to persistent tools (tasks)
  from 0 to 100%, and `persistent_sweep.advantage` of MRTR at each share;
- `scenarios.build(name, **overrides) -> SimParams`;
- the parameter dataclasses, `ParameterError`, and `ARCHITECTURES`.
"""

from labsim import persistent_sweep, scenarios
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
    TaskParams,
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
    "TaskParams",
    "WorkloadParams",
    "compare",
    "littles_law",
    "persistent_sweep",
    "replicate",
    "scenarios",
    "simulate",
    "sweep",
]

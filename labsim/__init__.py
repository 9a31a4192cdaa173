"""labsim: SimPy models of three ways an MCP server asks a user for input, at scale.

SSE + shared store, a sticky load balancer, and Multi Round-Trip Requests
(MRTR) run the same workload on the same cluster, so the differences in
latency, memory held, failures and cost are the architectures'. The package
has two rooms: the model (`labsim.model`: parameters, workload, cluster,
balancers, stores, faults, autoscaler, the architectures and the simulation)
and the study built on it (`labsim.study`: scenarios, experiments and sweeps,
capacity planning, validation against queueing theory, benchmark, plots).

    >>> import labsim
    >>> from labsim.study import scenarios
    >>> params = scenarios.build("crash", replicas=8)
    >>> result = labsim.simulate(params, "mrtr", seed=1)
    >>> result.summary["lost"]
    0

The public API here is the model's:

- `simulate(params, architecture, seed) -> RunResult` with `.calls`,
  `.timeline`, `.events` (DataFrames) and `.summary` (dict);
- the parameter dataclasses, the faults, the autoscaler, `ParameterError`, and
  `ARCHITECTURES`.

The study is imported from `labsim.study`: `compare(scenario, replications, ...)`,
`sweep(...)` and `replicate(...)` return tidy DataFrames; `scenarios.build(name,
**overrides) -> SimParams`; `persistent_sweep.share_sweep(...)` sweeps the share of
calls to persistent tools (tasks) from 0 to 100%, and `persistent_sweep.advantage` gives
MRTR's at each share. Importing `labsim` loads none of the study.
"""

from labsim.model.autoscale import Autoscaler
from labsim.model.checks import ParameterError
from labsim.model.demand import ClientParams, ServiceTime, WorkloadParams
from labsim.model.deployment import ClusterParams, CostParams, StateParams, StoreParams, TaskParams
from labsim.model.faults import LoadSpike, ReplicaCrash, RollingUpgrade, StoreOutage
from labsim.model.metrics import RunResult, littles_law
from labsim.model.params import SimParams
from labsim.model.simulation import ARCHITECTURES, simulate

__all__ = [
    "ARCHITECTURES",
    "Autoscaler",
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
    "littles_law",
    "simulate",
]

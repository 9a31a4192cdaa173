"""Who pays for what: replica hours, the shared store, and bytes sent to the internet.

A deployment is billed like a taxi with a meter running: every replica costs
its vCPUs and memory per hour whether busy or idle (Fargate), the shared store
costs a minimum of stored GB per hour plus its operations (ElastiCache
Serverless ECPUs), and every byte sent back to clients costs egress.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from labsim.model.deployment import CostParams
from labsim.model.params import SimParams

SECONDS_PER_HOUR = 3600.0
BYTES_PER_GB = 1e9


@dataclass(frozen=True)
class Usage:
    """What a run consumed over its measurement window."""

    replica_hours: float  # replica-hours billed (running, serving or draining)
    store_hours: float  # hours a shared store was provisioned (0 without one)
    store_ops: int  # store commands
    egress_bytes: int  # bytes sent from the servers to clients
    calls: int  # calls served in the window, to spread the bill over


@dataclass(frozen=True)
class CostBreakdown:
    """A run's bill in US dollars, by item, and per million calls."""

    replicas_usd: float
    store_usd: float
    egress_usd: float

    @property
    def total_usd(self) -> float:
        """The whole bill."""
        return self.replicas_usd + self.store_usd + self.egress_usd

    def per_million_calls_usd(self, calls: int) -> float:
        """The bill spread over the calls, per million calls."""
        return self.total_usd / calls * 1e6 if calls else float("nan")

    def as_dict(self) -> dict[str, float]:
        """The items and the total, for a summary or a table."""
        return {**asdict(self), "total_usd": self.total_usd}


def replica_hour_usd(params: SimParams) -> float:
    """What one replica costs per hour: its vCPUs and memory at Fargate prices."""
    cluster, cost = params.cluster, params.cost
    return cluster.vcpus_per_replica * cost.vcpu_hour_usd + (
        cluster.memory_gb_per_replica * cost.gb_hour_usd
    )


def bill(usage: Usage, params: SimParams) -> CostBreakdown:
    """The bill for `usage` at the prices in `params.cost`."""
    cost: CostParams = params.cost
    store = params.store
    store_usd = usage.store_hours * store.billed_gb * cost.store_gb_hour_usd + (
        usage.store_ops * store.ecpus_per_op * cost.store_usd_per_million_ecpu / 1e6
    )
    return CostBreakdown(
        replicas_usd=usage.replica_hours * replica_hour_usd(params),
        store_usd=store_usd,
        egress_usd=usage.egress_bytes / BYTES_PER_GB * cost.egress_usd_per_gb,
    )

"""What aims `python -m loadtest verify-plan` at a deployment the lab did not start.

Each field is an option of the command, stated once (`server.flags.setting`); kept apart
from the check (`loadtest.verify.deployment`) so that the command line offers them without
loading the simulation.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadtest.target.callers import TargetCallers
from server.flags import setting


@dataclass(frozen=True)
class TargetSettings(TargetCallers):
    """The deployment a plan is checked against, and how its callers authenticate."""

    target: str | None = setting(
        None,
        metavar="URL",
        help="check the plan against this deployment's MCP endpoint instead of the lab's "
        "cluster: the plan's workload, its own tools under their names, judged as the "
        "cluster is; what the lab cannot see of replicas it does not run is said, not judged",
    )
    replicas: int | None = setting(
        None, metavar="N", help="with --target: how many replicas the deployment runs"
    )
    target_one_fewer: str | None = setting(
        None,
        metavar="URL",
        help="with --target: a deployment of one replica fewer, checked the same way",
    )
    replica_metrics: str | None = setting(
        None,
        metavar="URL,...",
        help="with --target: the replicas' /metrics, whose process_cpu_seconds_total and "
        "process_resident_memory_bytes judge CPU and memory (without: not seen)",
    )

    @property
    def metrics_urls(self) -> tuple[str, ...]:
        """The replicas' `/metrics` URLs given."""
        return tuple(url.strip() for url in (self.replica_metrics or "").split(",") if url.strip())

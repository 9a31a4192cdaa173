"""What this machine can give a live check of a plan, and how much noise it accepts.

Each field is an option of `python -m loadtest verify-plan`, stated once
(`server.flags.setting`); kept apart from the rest of the check so that the command line
offers them without loading the simulation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from server.flags import setting


@dataclass(frozen=True)
class Hosting:
    """What this machine can give a live check, and how much noise it accepts."""

    max_replicas: int = setting(
        4, metavar="N", help="most replicas this machine runs at once for a live check"
    )
    max_rate_per_s: float = setting(
        60.0,
        flag="--max-rate",
        metavar="PER_S",
        help="most calls per second one load generator here starts reliably (open loop, "
        "each call a user with its own connections)",
    )
    cpu_cores: float = setting(
        max(0.5, (os.cpu_count() or 2) - 1.0),
        metavar="CORES",
        help="CPU cores the replicas may use at the plan's load (the rest is the load "
        "generator's and the balancer's)",
    )
    max_open_calls: int = setting(
        2000,
        metavar="N",
        help="most calls the load generator holds open at once (held legacy streams)",
    )
    max_cpu_wait_share: float = setting(
        0.2,
        metavar="SHARE",
        help="largest share of a replica's busy time (CPU + wait for a CPU) spent waiting "
        "for a CPU that other programs held; a run beyond it, and beyond "
        "--max-cpu-wait-of-slo, is not judged",
    )
    max_cpu_wait_of_slo: float = setting(
        0.05,
        metavar="SHARE",
        help="largest wait for a CPU a call may meet on the mean, as a share of the SLO's "
        "p95; a run beyond it, and beyond --max-cpu-wait-share, is not judged",
    )

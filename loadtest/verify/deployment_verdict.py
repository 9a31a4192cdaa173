"""What a run against a deployment says of each of the plan's constraints, and whether it
bore out what the plan said of the deployment's size.

A replica the lab does not run shows it only what its callers meet and what its
`/metrics` state: a constraint the run could not see is said to be not seen (and how it
could be), never judged held; a plan's miss that rests only on constraints not seen is
neither borne out nor contradicted by the run.
"""

from __future__ import annotations

from typing import Any

from labsim.study.constraints import CONSTRAINTS
from labsim.study.plan import FleetVerdict

#: What the lab cannot see of replicas it does not run, and how it could.
NOT_SEEN = {
    "cpu": "not seen: the replicas' CPU (give --replica-metrics or run the replicas where "
    "the lab can see them)",
    "memory": "not seen: the replicas' memory (give --replica-metrics or run the replicas "
    "where the lab can see them)",
    "connections": "not seen: the replicas' open connections and the balancer's "
    "down-marks (no answer 503 reached the callers)",
}


def constraint_states(broke: list[str], metrics_seen: bool, refused: int) -> dict[str, str]:
    """Each constraint of the plan: held, broken, or not seen (and how it could be)."""
    states: dict[str, str] = {}
    for constraint in CONSTRAINTS:
        unseen = (constraint in ("cpu", "memory") and not metrics_seen) or (
            constraint == "connections" and not refused
        )
        if unseen:
            states[constraint] = NOT_SEEN[constraint]
        elif constraint in broke:
            states[constraint] = "broken" + (
                f": {refused} answers 503 reached the callers"
                if constraint == "connections"
                else ""
            )
        else:
            states[constraint] = "held"
    return states


def held(live: dict[str, Any], said: FleetVerdict | None) -> bool | None:
    """Whether a run bore out what the plan said of its size: None when the plan said
    nothing of it, left it undecided (`undecided`), or said it misses only on constraints
    the run could not see."""
    if said is None or said.marginal:
        return None
    if live["meets"] == said.meets:
        return True
    unseen = {c for c, state in live["constraints"].items() if state.startswith("not seen")}
    if live["meets"] and said.broke and set(said.broke) <= unseen:
        return None
    return False


def undecided(said: FleetVerdict | None, live: dict[str, Any]) -> str | None:
    """Why a run at a size the plan left undecided is not judged, or None if it decided.

    A plan calls a size marginal when, after the most replications it allows, its runs
    still disagree (some met everything, some broke a limit) or a 95% interval holds the
    SLO's figure: it then says neither that the size meets nor that it misses, and a live
    run that met bears it out no more than one that missed.
    """
    if said is None or not said.marginal:
        return None
    return (
        f"{said.replicas} replicas: the plan left them undecided (marginal after "
        f"{said.replications} replications: its runs disagree, or an interval holds the "
        f"SLO's figure); live {'met' if live['meets'] else 'missed'}: not judged"
    )


def unseen_miss(said: FleetVerdict) -> str:
    """Why a run could not bear out the plan's miss at its size."""
    return (
        f"{said.replicas} replicas: the plan said they miss on {', '.join(said.broke)}, "
        "which the lab did not see there"
    )

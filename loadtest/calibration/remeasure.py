"""Part of a parameter file measured again, the rest kept:
`python -m loadtest measure --only held|round|memory --json labsim/measured.json`.

For a change to the server that moves one figure: the memory a held legacy call keeps
alive (`held`), the service time of a round (`round`), the memory of an idle replica
(`memory`). CPU time on a shared machine moves with its neighbours, memory does not, so
figures that did not change are not measured again. The file keeps its `command` and
`measured_at` for the rest, and lists each measurement under `remeasured`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

#: What `--only` measures again.
PARTS = ("held", "round", "memory")


def remeasure(
    document: dict[str, Any],
    part: str,
    *,
    held_calls: int = 200,
    stretch_s: float = 5.0,
    progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> dict[str, Any]:
    """`document` (a parameter file) with `part` measured again."""
    # Here, not at the top: the command line reads PARTS without loading the harness.
    from loadtest.calibration.measure import (
        measure_base_memory,
        measure_held,
        measure_rounds,
        now,
    )

    updated = dict(document)
    details = dict(document.get("details", {}))
    if part == "held":
        held = {arch: measure_held(arch, held_calls, progress) for arch in ("sticky", "sse-store")}
        updated["values"] = {
            **document["values"],
            "held_call_bytes": round(held["sticky"]["rss_bytes_per_call"]),
        }
        details["held_calls"] = held
        changed = ["held_call_bytes"]
    elif part == "round":
        rounds = measure_rounds(stretch_s, progress)
        updated["round_cpu"] = rounds["round"].as_round_cpu()
        details["round"] = {
            **vars(rounds["round"]),
            "round_alone_s": rounds["round_alone_s"],
            "rounds_timed": rounds["rounds_timed"],
        }
        changed = ["round_cpu"]
    elif part == "memory":
        by_architecture = measure_base_memory(progress)
        updated["replica"] = {
            "base_memory_bytes": by_architecture["mrtr"],
            "base_memory_bytes_by_architecture": by_architecture,
        }
        changed = ["replica"]
    else:
        raise ValueError(f"--only is one of {', '.join(PARTS)}")
    updated["details"] = details
    command = f"python -m loadtest measure --only {part} --json labsim/measured.json"
    entry = {"command": command, "measured_at": now(), "values": changed}
    updated["remeasured"] = [*document.get("remeasured", []), entry]
    return updated

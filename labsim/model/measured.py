"""Inputs measured on the live server: the parameter file the simulation's defaults come from.

`python -m loadtest measure --json labsim/measured.json` runs the lab's own
server and writes what the model needs to know about it: the memory a held
legacy call adds to a replica, the CPU of a round and of sealing and opening a
`requestState`, the bytes of a request and a response, and the time a round
spends on the wire, and the memory of an idle replica (`replica`, which
`labsim plan` adds to its held calls). The defaults in `labsim.model.demand` and
`labsim.model.deployment` (and `labsim.study.plan_request` for the replica) are the values
of the file shipped with the package (a test holds them equal); `--params FILE` on the
command line, or `load` and `apply` from Python, use another measurement.

The file's format:

    {"command": "...", "measured_at": "ISO UTC",
     "values": {"held_call_bytes": int, "request_overhead_s": float, ...},
     "replica": {"base_memory_bytes": int},
     "details": {...}}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labsim.model.checks import ParameterError
from labsim.model.params import SimParams

# The file lives at the package's top (`labsim/measured.json`), where `python -m loadtest
# measure` writes it: an input to the model, beside the code rather than inside it.
#: The measurement shipped with the package, the source of the defaults.
DEFAULT_PATH = Path(__file__).parents[1] / "measured.json"

#: Every value the file carries, and its type; each is a `SimParams` field name.
MEASURED_FIELDS: dict[str, type] = {
    "held_call_bytes": int,
    "request_overhead_s": float,
    "seal_cpu_s": float,
    "open_cpu_s": float,
    "request_bytes": int,
    "response_bytes": int,
    "network_rtt_s": float,
    "network_rtt_cv": float,
}
#: What the file says about a replica itself, outside the simulation's parameters.
REPLICA_FIELDS: dict[str, type] = {"base_memory_bytes": int}


@dataclass(frozen=True)
class Measurement:
    """One measured parameter file: the values, the command that made them, and when."""

    command: str
    measured_at: str
    values: dict[str, float | int]
    details: dict[str, Any]
    replica: dict[str, int]

    def overrides(self) -> dict[str, float | int]:
        """The values as `SimParams.with_overrides` keywords."""
        return dict(self.values)

    def apply(self, params: SimParams) -> SimParams:
        """`params` with every measured value put in."""
        return params.with_overrides(**self.values)


def parse(payload: dict[str, Any], source: str = "parameter file") -> Measurement:
    """Check a decoded parameter file and return it as a `Measurement`."""
    values = payload.get("values")
    if not isinstance(values, dict):
        raise ParameterError(f"{source}: no 'values' object")
    missing = sorted(set(MEASURED_FIELDS) - set(values))
    if missing:
        raise ParameterError(f"{source}: missing values {', '.join(missing)}")
    checked: dict[str, float | int] = {}
    for name, kind in MEASURED_FIELDS.items():
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ParameterError(f"{source}: {name} must be a number >= 0, got {value!r}")
        checked[name] = kind(value)
    replica = payload.get("replica") or {}
    if not isinstance(replica, dict) or not all(
        isinstance(replica.get(name), int) and replica[name] > 0 for name in REPLICA_FIELDS
    ):
        raise ParameterError(f"{source}: 'replica' must give {', '.join(REPLICA_FIELDS)} > 0")
    return Measurement(
        command=str(payload.get("command", "")),
        measured_at=str(payload.get("measured_at", "")),
        values=checked,
        details=dict(payload.get("details") or {}),
        replica={name: replica[name] for name in REPLICA_FIELDS},
    )


def load(path: str | Path = DEFAULT_PATH) -> Measurement:
    """Read and check a parameter file written by `python -m loadtest measure`."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text())
    except OSError as error:
        raise ParameterError(f"cannot read parameter file {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ParameterError(f"parameter file {path} is not JSON: {error}") from None
    if not isinstance(payload, dict):
        raise ParameterError(f"parameter file {path} must hold a JSON object")
    return parse(payload, str(path))

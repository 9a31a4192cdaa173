"""Inputs measured on a live server: the parameter file the simulation's defaults come from.

`python -m loadtest measure --json labsim/measured.json` runs the lab's own server and
writes what the model needs to know about it: the memory a held legacy call adds to a
replica, the CPU of a round and of sealing and opening a `requestState`, the bytes of a
request and a response, the time a round spends on the wire, and the memory of an idle
replica. `python -m loadtest measure --target URL --tool NAME` measures one tool of any
MCP server the same way, as far as it can see it. The defaults in `labsim.model.demand`
and `labsim.model.deployment` are the values of the file shipped with the package (a
test holds them equal); `--params FILE` on the command line, or `load` and `apply` from
Python, use another measurement.

The file's format. Every key is read, or refused by name; none is passed over:

    {"command": "...", "measured_at": "ISO UTC", "target": "...",     (where it came from)
     "values": {"held_call_bytes": 25436, "cluster.network_rtt_s": 0.00057, ...},
     "round_cpu": {"mean_s": 0.0002, "cv": 0.4, "kind": "lognormal"},
     "replica": {"base_memory_bytes": 52424704,
                 "base_memory_bytes_by_architecture": {"sse-store": 55000000, ...}},
     "details": {...}, "remeasured": [...]}                           (the raw figures)

- `values`: parameters by name, as `--set` takes them (a field name alone, or
  `section.field`); each is optional, and one the file does not give keeps its default.
- `round_cpu`: the replica's whole service time per round of the measured tool (parsing
  the request, the tool, the answer), as `labsim plan --round-cpu-ms/-cv/-kind` state it;
  the model takes its constant part as the request's overhead and the rest as the tool's
  (`labsim.model.demand.split_round`).
- `replica`: the resident memory of a warmed-up idle replica, and per architecture where
  it was measured apart (a replica of the Redis-backed store holds a client and its pool).
- `tools`: each tool's figures under its own name, by era (`measure --target` writes
  them); `labsim plan --tool-mix NAME=W,...` plans those tools under their names and
  checks their figures (`labsim.study.plan_tools`).
- `details`, `remeasured`, `command`, `measured_at`, `target`: provenance, kept with the
  figures and printed, not parameters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labsim.model.checks import ParameterError, is_number
from labsim.model.demand import SERVICE_TIME_KINDS, ServiceTime, split_round
from labsim.model.params import SimParams

# The file lives at the package's top (`labsim/measured.json`), where `python -m loadtest
# measure` writes it: an input to the model, beside the code rather than inside it.
#: The measurement shipped with the package, the source of the defaults.
DEFAULT_PATH = Path(__file__).parents[1] / "measured.json"

#: The values `python -m loadtest measure` writes for the lab's own server, and their
#: types; each is a `SimParams` field name. A file may give fewer, or others.
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
#: Keys of the file that say where the figures came from, kept and not read as parameters.
PROVENANCE = ("command", "measured_at", "target", "details", "remeasured")
#: Figures per tool, keyed by the tool's own name, then by protocol era (rounds per call,
#: CPU per round with its spread and kind, bytes per round): what `labsim plan` simulates
#: a target's tools by.
PER_TOOL = "tools"
#: Every key of the file.
SECTIONS = ("values", "round_cpu", "replica", PER_TOOL, *PROVENANCE)
ROUND_FIELDS = ("mean_s", "cv", "kind")
REPLICA_FIELDS = ("base_memory_bytes", "base_memory_bytes_by_architecture")


@dataclass(frozen=True)
class Measurement:
    """One parameter file: its parameters, the round it measured, and its replica's memory."""

    source: str
    command: str
    measured_at: str
    values: dict[str, Any]
    round_cpu: ServiceTime | None = None
    base_memory_bytes: int | None = None
    base_memory_by_architecture: dict[str, int] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    #: Each tool's figures by era, as `measure --target` writes them (`PER_TOOL`).
    tools: dict[str, Any] = field(default_factory=dict)

    def overrides(
        self, params: SimParams | None = None, architecture: str | None = None
    ) -> dict[str, Any]:
        """Every figure of the file as settings by path (`SimParams.with_settings`): its
        values, the round it measured (split into the request's overhead and the tool's
        work, against the overhead the file gives or `params` has), and the base memory of
        a replica (of `architecture`, where the file measured it apart)."""
        settings = dict(self.values)
        if self.round_cpu is not None:
            overhead_s = (params or SimParams()).workload.request_overhead_s
            overhead_s = settings.get("request_overhead_s", overhead_s)
            tool, overhead_s = split_round(self.round_cpu, overhead_s)
            settings.update({"workload.round_cpu": tool, "request_overhead_s": overhead_s})
        base = self.base_memory(architecture)
        if base is not None:
            settings["base_memory_bytes"] = base
        return settings

    def apply(self, params: SimParams, architecture: str | None = None) -> SimParams:
        """`params` with every figure of the file put in (see `overrides`)."""
        return params.with_settings(self.overrides(params, architecture))

    def base_memory(self, architecture: str | None) -> int | None:
        """The idle replica's memory for `architecture` (None: the file does not say)."""
        return self.base_memory_by_architecture.get(architecture or "", self.base_memory_bytes)

    def label(self) -> str:
        """Where the figures came from, for the plan's list of inputs."""
        when = f", {self.measured_at[:10]}" if self.measured_at else ""
        return f"{self.source}{when}"


def parse(payload: dict[str, Any], source: str = "parameter file") -> Measurement:
    """Check a decoded parameter file and return it as a `Measurement`."""
    unknown = sorted(set(payload) - set(SECTIONS))
    if unknown:
        raise ParameterError(
            f"{source}: unknown key {', '.join(map(repr, unknown))}; a parameter file has "
            f"{', '.join(SECTIONS)}"
        )
    values = payload.get("values", {})
    if not isinstance(values, dict):
        raise ParameterError(f"{source}: 'values' must be an object of parameter: value")
    try:
        SimParams().with_settings(values)
    except ParameterError as error:
        raise ParameterError(f"{source}: values: {error}") from None
    for name, kind in MEASURED_FIELDS.items():
        if name in values:
            values = {**values, name: _number(values[name], f"{source}: values.{name}", kind)}
    replica = _section(payload, "replica", REPLICA_FIELDS, source)
    base = replica.get("base_memory_bytes")
    if base is not None:
        base = _number(base, f"{source}: replica.base_memory_bytes", int, positive=True)
    by_architecture = replica.get("base_memory_bytes_by_architecture") or {}
    if not isinstance(by_architecture, dict):
        raise ParameterError(f"{source}: replica.base_memory_bytes_by_architecture is an object")
    return Measurement(
        source=source,
        command=str(payload.get("command", "")),
        measured_at=str(payload.get("measured_at", "")),
        values=dict(values),
        round_cpu=_round(payload, source),
        base_memory_bytes=base,
        base_memory_by_architecture={
            str(arch): _number(v, f"{source}: replica.{arch}", int, positive=True)
            for arch, v in by_architecture.items()
        },
        details=dict(payload.get("details") or {}),
        tools=dict(payload.get(PER_TOOL) or {}),
    )


def _section(
    payload: dict[str, Any], name: str, fields: tuple[str, ...], source: str
) -> dict[str, Any]:
    section = payload.get(name) or {}
    if not isinstance(section, dict):
        raise ParameterError(f"{source}: '{name}' must be an object")
    unknown = sorted(set(section) - set(fields))
    if unknown:
        raise ParameterError(
            f"{source}: unknown key {', '.join(f'{name}.{k}' for k in unknown)}; "
            f"'{name}' has {', '.join(fields)}"
        )
    return section


def _round(payload: dict[str, Any], source: str) -> ServiceTime | None:
    section = _section(payload, "round_cpu", ROUND_FIELDS, source)
    if not section:
        return None
    missing = [name for name in ROUND_FIELDS if name not in section]
    if missing:
        raise ParameterError(f"{source}: round_cpu needs {', '.join(missing)}")
    if section["kind"] not in SERVICE_TIME_KINDS:
        raise ParameterError(
            f"{source}: round_cpu.kind is one of {', '.join(SERVICE_TIME_KINDS)}, "
            f"got {section['kind']!r}"
        )
    mean_s = _number(section["mean_s"], f"{source}: round_cpu.mean_s", float, positive=True)
    cv = _number(section["cv"], f"{source}: round_cpu.cv", float)
    try:
        return ServiceTime(mean_s=mean_s, kind=section["kind"], cv=cv)
    except ParameterError as error:
        raise ParameterError(f"{source}: round_cpu: {error}") from None


def _number(value: Any, where: str, kind: type, positive: bool = False) -> Any:
    if not is_number(value, positive):
        raise ParameterError(
            f"{where} must be a number {'>' if positive else '>='} 0, got {value!r}"
        )
    return kind(value)


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
    shipped = path.resolve() == DEFAULT_PATH.resolve()
    return parse(payload, "labsim/measured.json" if shipped else str(path))

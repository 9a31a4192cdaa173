"""A plan of `labsim plan`: the question it answered, what it simulated, and per
architecture the fleet that meets the SLO, one replica fewer, and the bill.

`Plan.to_json()` is the document `labsim plan --json` writes and `Plan.from_json()` reads
it back, the one reader: `python -m loadtest verify-plan`, the notebooks and the report
read a plan through it, so a field the writer renames is a field every reader misses at
once, by its name. The document carries `FORMAT_VERSION`; a document of an older version
is read with its fields renamed as they are now (`RENAMED_IN`), one of a newer version, or
missing a field, or with one this version does not know, is refused naming it.

In a plan, a figure of None is one that has no value: an infinite p95 (a miss: too few
calls completed to have one) or a mean over nothing.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labsim.model.checks import ParameterError
from labsim.model.params import SimParams
from labsim.model.tools import SimTool
from labsim.study.plan_inputs import Input, assumptions
from labsim.study.plan_request import PlanRequest

#: The version of the plan's document this writes; it reads this one and every older one.
FORMAT_VERSION = 3
#: The fields each version renamed, by the object of the document that holds them.
#: Version 2: the think time and the users who never answer, named as the load test
#: names them. Version 3 renamed nothing: it added the target's tools (`Plan.tools`).
RENAMED_IN: dict[int, dict[tuple[str, ...], dict[str, str]]] = {
    2: {
        section: {
            "think_median_s": "think_time_median_s",
            "think_sigma": "think_time_sigma",
            "never_answer_fraction": "never_answer_share",
        }
        for section in (("request",), ("params", "workload"))
    },
}


_TOOLS = dict[str, tuple[SimTool, ...]]


class PlanFormatError(ValueError):
    """A document that is not a plan this version reads: the message names the field."""


@dataclass(frozen=True)
class FleetVerdict:
    """One fleet size as the plan judged it in simulation, over its replications."""

    replicas: int
    meets: bool
    #: After the most replications the plan allows, its runs still disagree, or a 95%
    #: interval (of its p95 or completed share) holds the SLO's figure.
    marginal: bool
    p95_ms: float | None
    p95_ms_ci: tuple[float | None, float | None]
    completed_share: float
    completed_share_ci: tuple[float, float]
    p50_ms: float | None
    p95_completed_ms: float | None
    utilization: float | None
    peak_replica_memory_bytes: float
    peak_replica_connections: int
    refused_requests: float
    down_marks: float
    full_marks: float
    #: Each constraint's use of its limit (`labsim.study.constraints`; 1 is the limit).
    use: dict[str, float | None]
    #: The constraints it broke, the limits first, each group furthest past first.
    broke: tuple[str, ...]
    replications: int


@dataclass(frozen=True)
class ArchitectureAnswer:
    """One architecture's answer: its fleet (or why there is none), what binds it, one
    replica fewer (or why there is none), and the bill."""

    #: Replicas each constraint needs from first principles, before any simulation.
    first_guess: dict[str, int]
    #: The p95 of the rounds with nothing waiting: no fleet meets an SLO below it.
    latency_floor_p95_ms: float
    base_memory_bytes: int
    simulated_sizes: tuple[int, ...]
    #: The constraint that sets the fleet's size, or `none`.
    binding: str
    fleet: FleetVerdict | None = None
    cost_per_month_usd: float | None = None
    cost_breakdown: dict[str, float] | None = None
    one_fewer: FleetVerdict | None = None
    #: Why there is no one fewer (a fleet of one).
    one_fewer_reason: str = ""
    #: Why no fleet meets.
    reason: str = ""
    #: With no fleet found by walking up: the largest fleet simulated.
    largest_tried: FleetVerdict | None = None

    @property
    def replicas(self) -> int | None:
        """The fleet's size, or None when no fleet meets."""
        return self.fleet.replicas if self.fleet is not None else None

    @property
    def meets(self) -> bool:
        """Whether the answer meets the SLO and every limit (False: no fleet does)."""
        return self.fleet.meets if self.fleet is not None else False

    def to_json(self) -> dict[str, Any]:
        """The answer as the plan's document writes it: the fleet's figures inline."""
        found: dict[str, Any] = {
            "first_guess": dict(self.first_guess),
            "latency_floor_p95_ms": self.latency_floor_p95_ms,
            "base_memory_bytes": self.base_memory_bytes,
            "simulated_sizes": list(self.simulated_sizes),
        }
        if self.fleet is None:
            found.update(replicas=None, meets=False, binding=self.binding, reason=self.reason)
            if self.largest_tried is not None:
                found["largest_tried"] = dataclasses.asdict(self.largest_tried)
            return _json(found)
        found.update(dataclasses.asdict(self.fleet))
        found.update(
            binding=self.binding,
            cost_per_month_usd=self.cost_per_month_usd,
            cost_breakdown=self.cost_breakdown,
        )
        if self.one_fewer is not None:
            found["one_fewer"] = dataclasses.asdict(self.one_fewer)
        else:
            found["one_fewer_reason"] = self.one_fewer_reason
        return _json(found)

    @classmethod
    def from_json(cls, value: Any, where: str) -> ArchitectureAnswer:
        """An answer read from the plan's document (`where` names it in errors)."""
        fields = _object(value, where)
        common = {
            "first_guess": _read(dict[str, int], fields, "first_guess", where),
            "latency_floor_p95_ms": _read(float, fields, "latency_floor_p95_ms", where),
            "base_memory_bytes": _read(int, fields, "base_memory_bytes", where),
            "simulated_sizes": _read(tuple[int, ...], fields, "simulated_sizes", where),
            "binding": _read(str, fields, "binding", where),
        }
        if _field(fields, "replicas", where) is None:
            if _read(bool, fields, "meets", where):
                raise PlanFormatError(f"{where}.meets: true with no fleet (replicas null)")
            known = {*common, "replicas", "meets", "reason", "largest_tried"}
            _no_others(fields, known, where)
            largest = fields.get("largest_tried")
            return cls(
                **common,
                reason=_read(str, fields, "reason", where),
                largest_tried=None
                if largest is None
                else _dataclass(FleetVerdict, largest, f"{where}.largest_tried"),
            )
        verdict_names = {f.name for f in dataclasses.fields(FleetVerdict)}
        for name in verdict_names:
            _field(fields, name, where)
        fleet = _dataclass(FleetVerdict, {k: fields[k] for k in verdict_names}, where)
        known = {*common, *verdict_names, "cost_per_month_usd", "cost_breakdown"}
        if "one_fewer" in fields:
            one_fewer = _dataclass(FleetVerdict, fields["one_fewer"], f"{where}.one_fewer")
            reason = ""
            known.add("one_fewer")
        else:
            one_fewer, reason = None, _read(str, fields, "one_fewer_reason", where)
            known.add("one_fewer_reason")
        _no_others(fields, known, where)
        return cls(
            **common,
            fleet=fleet,
            cost_per_month_usd=_read(float, fields, "cost_per_month_usd", where),
            cost_breakdown=_read(dict[str, float], fields, "cost_breakdown", where),
            one_fewer=one_fewer,
            one_fewer_reason=reason,
        )


@dataclass(frozen=True)
class Plan:
    """The answer of `labsim plan`: the question, what was simulated, every figure it
    rests on, and each architecture's answer."""

    #: The architect's question, on the replica shape Fargate sells, with the server
    #: work per round as it was resolved (stated, or the parameter file's).
    request: PlanRequest
    #: What the first architecture's runs simulated at its answer; the others differ
    #: only in their fleet and base memory, both in `architectures`.
    params: SimParams
    #: Every figure the plan rests on, with where it comes from.
    inputs: tuple[Input, ...]
    #: What the architect must know beside the table.
    notes: tuple[str, ...]
    architectures: dict[str, ArchitectureAnswer]
    #: The command that made it.
    command: str = ""
    elapsed_s: float | None = None
    #: The target's tools of the mix each architecture simulated (none before version 3).
    tools: dict[str, tuple[SimTool, ...]] = dataclasses.field(default_factory=dict)

    @property
    def assumptions(self) -> list[str]:
        """The figures nobody measured, as lines."""
        return assumptions(list(self.inputs))

    def to_json(self) -> dict[str, Any]:
        """The plan's document, JSON-ready (`labsim plan --json` writes it)."""
        document: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "command": self.command,
            "request": dataclasses.asdict(self.request),
            "params": dataclasses.asdict(self.params),
            "inputs": [dataclasses.asdict(row) for row in self.inputs],
            "assumptions": self.assumptions,
            "notes": list(self.notes),
            "architectures": {a: answer.to_json() for a, answer in self.architectures.items()},
            "tools": {a: [dataclasses.asdict(t) for t in ts] for a, ts in self.tools.items()},
        }
        if self.elapsed_s is not None:
            document["elapsed_s"] = self.elapsed_s
        return _json(document)

    @classmethod
    def from_json(cls, document: Any, source: str = "plan") -> Plan:
        """The plan in a decoded document; a `PlanFormatError` names what is wrong."""
        fields = _upgraded(_object(document, source), source)
        known = {"version", "command", "request", "params", "inputs", "assumptions", "notes"}
        _no_others(fields, {*known, "architectures", "elapsed_s", "tools"}, source)
        request = _request(_field(fields, "request", source), f"{source}: request")
        params = _params(_field(fields, "params", source), f"{source}: params")
        answers = _object(_field(fields, "architectures", source), f"{source}: architectures")
        plan = cls(
            request=request,
            params=params,
            inputs=_read(tuple[Input, ...], fields, "inputs", source),
            notes=_read(tuple[str, ...], fields, "notes", source),
            architectures={
                str(name): ArchitectureAnswer.from_json(value, f"{source}: architectures.{name}")
                for name, value in answers.items()
            },
            command=_read(str, fields, "command", source),
            elapsed_s=_read(float | None, fields, "elapsed_s", source)
            if "elapsed_s" in fields
            else None,
            tools=_read(_TOOLS, fields, "tools", source) if "tools" in fields else {},
        )
        # Derived from the inputs, and read only to be sure the document is whole.
        _read(tuple[str, ...], fields, "assumptions", source)
        return plan


def _upgraded(fields: Mapping[str, Any], source: str) -> Mapping[str, Any]:
    """A document of an older format version with its fields named as this version names
    them; one of a version this does not read refused."""
    version = _field(fields, "version", source)
    if not (isinstance(version, int) and 1 <= version <= FORMAT_VERSION):
        raise PlanFormatError(
            f"{source}: a plan of format version {version!r}; this version reads 1 to "
            f"{FORMAT_VERSION}"
        )
    if version == FORMAT_VERSION:
        return fields
    document = copy.deepcopy(dict(fields))
    for later in range(version + 1, FORMAT_VERSION + 1):
        for path, renamed in RENAMED_IN.get(later, {}).items():
            holder: Any = document
            for key in path:
                holder = holder.get(key) if isinstance(holder, dict) else None
            if isinstance(holder, dict):
                for old, new in renamed.items():
                    if old in holder:
                        holder[new] = holder.pop(old)
    return document


def _request(value: Any, where: str) -> PlanRequest:
    """The request, every field present; its own checks (by flag) as a format error."""
    try:
        return _dataclass(PlanRequest, value, where)
    except ParameterError as error:
        raise PlanFormatError(f"{where}: {error}") from None


def _params(value: Any, where: str) -> SimParams:
    """The simulated parameters. A parameter the document lacks is the model's default,
    which a plan made before the parameter existed simulated."""
    try:
        return _dataclass(SimParams, value, where, every_field=False)
    except ParameterError as error:
        raise PlanFormatError(f"{where}: {error}") from None


def _json(value: Any) -> Any:
    """`value` as JSON writes it: tuples as lists, a non-finite figure as null."""
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PlanFormatError(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def _at(where: str, name: str) -> str:
    """The place of field `name` of the object at `where` (`source: path.to.it`)."""
    return f"{where}.{name}" if ": " in where else f"{where}: {name}"


def _field(fields: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in fields:
        source, _, path = _at(where, name).partition(": ")
        raise PlanFormatError(f"{source}: no '{path}' (is it a plan from labsim plan --json?)")
    return fields[name]


def _no_others(fields: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(fields) - known)
    if unknown:
        raise PlanFormatError(
            f"{where}: {', '.join(unknown)}: not a field of a plan of format version "
            f"{FORMAT_VERSION}"
        )


def _read(kind: Any, fields: Mapping[str, Any], name: str, where: str) -> Any:
    return _value(kind, _field(fields, name, where), _at(where, name))


def _dataclass(cls: Any, value: Any, where: str, every_field: bool = True) -> Any:
    """An instance of dataclass `cls` from its fields in `value`, nested ones alike; with
    `every_field` False a field `value` lacks keeps its default."""
    fields = _object(value, where)
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    _no_others(fields, set(names), where)
    if every_field:
        for name in names:
            _field(fields, name, where)
    read = {
        name: _value(hints[name], fields[name], _at(where, name), every_field)
        for name in names
        if name in fields
    }
    return cls(**read)


def _value(kind: Any, value: Any, where: str, every_field: bool = True) -> Any:
    """`value` read as type `kind`, or a `PlanFormatError` naming `where`."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        (inner,) = (a for a in args if a is not type(None))
        return _value(inner, value, where, every_field)
    if dataclasses.is_dataclass(kind):
        return _dataclass(kind, value, where, every_field)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise PlanFormatError(f"{where} must be a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(value)
        if len(args) != len(value):
            raise PlanFormatError(f"{where} must have {len(args)} items, got {value!r}")
        return tuple(
            _value(a, v, f"{where}[{k}]", every_field)
            for k, (a, v) in enumerate(zip(args, value, strict=True))
        )
    if origin is dict:
        return {
            str(k): _value(args[1], v, _at(where, str(k)), every_field)
            for k, v in _object(value, where).items()
        }
    if kind is float:
        if value is None:
            return math.nan  # the document writes a figure that is no number as null
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif kind in (int, bool, str):
        if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
            return value
    else:
        raise PlanFormatError(f"{where}: a plan holds no {kind} (got {value!r})")
    raise PlanFormatError(f"{where} must be {kind.__name__}, got {value!r}")

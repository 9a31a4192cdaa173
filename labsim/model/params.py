"""Parameters of a simulated MCP deployment: its parts, its faults, its scaler, its horizon.

A deployment is described by a handful of frozen dataclasses: who calls and how
(`WorkloadParams`, `ClientParams`, in `labsim.model.demand`), what serves them and what
it costs (`ClusterParams`, `StoreParams`, `TaskParams`, `StateParams`, `CostParams`, in
`labsim.model.deployment`). `SimParams` gathers them with the faults to inject, the
autoscaler if the fleet scales, and the simulated horizon; the CLI, the scenarios and
the notebooks all fill one `SimParams`.

Every field carries its unit in its name (`_s`, `_bytes`, `_per_s`, `_usd`) and a
comment saying where its default comes from; `docs/model.md` lists them all with their
sources. Values outside their domain raise `ParameterError` when the dataclass is built.

The faults and the autoscaler act on a running simulation, which is built from these
parameters: this module names only the shape it needs of them (`Fault`, `Scaler`), so
that the parameters stand below everything that reads them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

from labsim.model.checks import ParameterError, check_numbers, number_or_text, require
from labsim.model.demand import ClientParams, WorkloadParams
from labsim.model.deployment import (
    ClusterParams,
    CostParams,
    StateParams,
    StoreParams,
    TaskParams,
)

#: The parts of a deployment, each a dataclass of its own; `with_overrides` looks in each.
PARTS = ("workload", "client", "cluster", "store", "state", "tasks", "cost")


class Fault(Protocol):
    """What the parameters need of a fault: a frozen dataclass of its settings that checks
    it fits the deployment, says how it changes the arrivals, and runs as a process.

    `world` is the running simulation (`labsim.model.faults.World`), which is built
    from the parameters and so is not named here. The faults are in `labsim.model.faults`.
    """

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def check(self, params: SimParams) -> None:
        """Raise `ParameterError` if the fault does not fit the deployment."""
        ...

    def arrival_pieces(self) -> list[tuple[float, float, float]]:
        """(start_s, end_s, multiplier) changes the fault makes to the arrival rate."""
        ...

    def run(self, world: Any) -> Generator[Any, Any, None]:
        """The fault as a SimPy process acting on the running simulation."""
        ...


class Scaler(Protocol):
    """What the parameters need of an autoscaler: a frozen dataclass of its settings that
    checks it fits the deployment and runs as a process (`labsim.model.autoscale`)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def check(self, params: SimParams) -> None:
        """Raise `ParameterError` if the scaler does not fit the deployment."""
        ...

    def run(self, world: Any) -> Generator[Any, Any, None]:
        """The scaler as a SimPy process acting on the running simulation."""
        ...


@dataclass(frozen=True)
class SimParams:
    """One simulated deployment: workload, client, cluster, store, state, prices, faults, scaler.

    Calls arrive until `horizon_s`; the ones still in flight then run to their
    end. Statistics count calls that arrive in [`warmup_s`, `horizon_s`] and
    time averages over the same window, so the fill-up of held calls at the
    start does not bias them.
    """

    workload: WorkloadParams = field(default_factory=WorkloadParams)
    client: ClientParams = field(default_factory=ClientParams)
    cluster: ClusterParams = field(default_factory=ClusterParams)
    store: StoreParams = field(default_factory=StoreParams)
    state: StateParams = field(default_factory=StateParams)
    tasks: TaskParams = field(default_factory=TaskParams)
    cost: CostParams = field(default_factory=CostParams)
    faults: tuple[Fault, ...] = ()
    autoscaler: Scaler | None = None  # a fixed fleet unless a scenario scales it
    horizon_s: float = 900.0  # assumption: 15 simulated minutes, long enough for every fault
    warmup_s: float = 300.0  # held calls fill up within one answer timeout (300 s)
    sample_every_s: float = 5.0  # time-series resolution, fine enough to see a fault

    def __post_init__(self) -> None:
        check_numbers(self, "horizon_s", "sample_every_s", positive=True)
        check_numbers(self, "warmup_s")
        require(
            self.warmup_s < self.horizon_s,
            f"warmup_s ({self.warmup_s}) must be shorter than horizon_s ({self.horizon_s})",
        )
        for fault in self.faults:
            fault.check(self)
        if self.autoscaler is not None:
            self.autoscaler.check(self)

    def with_overrides(self, **overrides: Any) -> SimParams:
        """A copy with some fields replaced, named by field alone (`replicas=8`).

        A name is looked up in this dataclass, then in each part (workload, client,
        cluster, store, state, tasks, cost), then in the faults and the autoscaler
        (every one with that field gets the value). An unknown name is a
        `ParameterError`.
        """
        top: dict[str, Any] = {}
        parts: dict[str, dict[str, Any]] = {}
        acting: dict[str, Any] = {}  # fields of the faults and the autoscaler
        actors = (*self.faults, *((self.autoscaler,) if self.autoscaler else ()))
        for name, value in overrides.items():
            if name in _field_names(self):
                top[name] = value
                continue
            owner = next((p for p in PARTS if name in _field_names(getattr(self, p))), None)
            if owner is not None:
                parts.setdefault(owner, {})[name] = value
            elif any(name in _field_names(actor) for actor in actors):
                acting[name] = value
            else:
                raise ParameterError(f"unknown parameter {name!r}")
        for owner, values in parts.items():
            top[owner] = dataclasses.replace(getattr(self, owner), **values)
        if acting:
            top["faults"] = tuple(_replaced(f, acting) for f in top.get("faults", self.faults))
            autoscaler = top.get("autoscaler", self.autoscaler)
            if autoscaler is not None:
                top["autoscaler"] = _replaced(autoscaler, acting)
        return dataclasses.replace(self, **top)

    def with_settings(self, settings: Mapping[str, Any]) -> SimParams:
        """A copy with parameters set by path, as `--set` and a parameter file name them.

        A path is `section.field` (`cluster.connection_limit`), deeper for a field of a
        field (`workload.round_cpu.mean_s`), a top-level field (`horizon_s`), or a field
        name alone as `with_overrides` takes it (`connection_limit`). A section is a part
        (workload, client, cluster, store, state, tasks, cost), `autoscaler`, or `faults`
        (every fault with that field). Text becomes the field's type: `true`/`false` for
        a switch, `a,b,c` for a tuple. An unknown path is a `ParameterError` naming it.
        """
        params = self
        flat: dict[str, Any] = {}
        for path, value in settings.items():
            names = path.split(".")
            if len(names) == 1:
                flat[path] = _coerced(_flat_value(params, path), value, path)
            else:
                params = _set_path(params, names, value, path)
        return params.with_overrides(**flat) if flat else params


def _flat_value(params: SimParams, name: str) -> Any:
    """The current value of a field named alone (as `with_overrides` finds it)."""
    for owner in (params, *(getattr(params, p) for p in PARTS), *params.faults):
        if name in _field_names(owner):
            return getattr(owner, name)
    if params.autoscaler is not None and name in _field_names(params.autoscaler):
        return getattr(params.autoscaler, name)
    raise ParameterError(f"unknown parameter {name!r}")


def _set_path(owner: Any, names: list[str], value: Any, path: str) -> Any:
    """`owner` (a dataclass) with the field at `names` set to `value`."""
    head, rest = names[0], names[1:]
    if head == "faults" and isinstance(owner, SimParams) and rest:
        matching = [f for f in owner.faults if rest[0] in _field_names(f)]
        if not matching:
            raise ParameterError(f"unknown parameter {path!r}: no fault has {rest[0]!r}")
        faults = tuple(
            _set_path(f, rest, value, path) if f in matching else f for f in owner.faults
        )
        return dataclasses.replace(owner, faults=faults)
    if (
        not dataclasses.is_dataclass(owner)
        or isinstance(owner, type)
        or head not in _field_names(owner)
    ):
        raise ParameterError(f"unknown parameter {path!r}")
    current = getattr(owner, head)
    if rest:
        if current is None or not dataclasses.is_dataclass(current):
            raise ParameterError(f"unknown parameter {path!r}: {head!r} has no fields")
        return dataclasses.replace(owner, **{head: _set_path(current, rest, value, path)})
    return dataclasses.replace(owner, **{head: _coerced(current, value, path)})


def _coerced(current: Any, value: Any, path: str) -> Any:
    """`value` in the type of the field's `current` value, when it came as text or an int."""
    if isinstance(current, bool) and isinstance(value, str):
        if value.lower() not in ("true", "false"):
            raise ParameterError(f"{path} is true or false, got {value!r}")
        return value.lower() == "true"
    if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(current, tuple) and isinstance(value, str):
        return tuple(number_or_text(part.strip()) for part in value.split(","))
    if isinstance(current, tuple) and isinstance(value, list):
        return tuple(value)
    return value


_Acting = TypeVar("_Acting", Fault, Scaler)


def _replaced(actor: _Acting, values: dict[str, Any]) -> _Acting:
    """`actor` with those of `values` that name its fields."""
    names = _field_names(actor)
    return dataclasses.replace(actor, **{k: v for k, v in values.items() if k in names})


def _field_names(instance: object) -> set[str]:
    return {f.name for f in dataclasses.fields(instance)}  # type: ignore[arg-type]

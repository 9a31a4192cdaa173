"""The measured parameter file: the defaults are its values, another file replaces them,
every key of a file is honoured or refused by name, and `--set` reaches any parameter."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from labsim.cli.options import overrides
from labsim.model import measured
from labsim.model.checks import ParameterError
from labsim.model.demand import ServiceTime, split_round
from labsim.model.params import SimParams

ROOT = Path(__file__).resolve().parents[2]


def _default_of(name: str) -> object:
    params = SimParams()
    for part in ("workload", "client", "cluster", "store", "state"):
        values = dataclasses.asdict(getattr(params, part))
        if name in values:
            return values[name]
    raise AssertionError(f"{name} is no SimParams field")


def _shipped() -> dict:
    return json.loads(measured.DEFAULT_PATH.read_text())


def _write(tmp_path: Path, payload: dict) -> Path:
    path = tmp_path / "measured.json"
    path.write_text(json.dumps(payload))
    return path


def test_the_defaults_are_the_shipped_measurement() -> None:
    shipped = measured.load()
    assert shipped.command.startswith("python -m loadtest measure")
    assert set(measured.MEASURED_FIELDS) <= set(shipped.values)
    for name, value in shipped.values.items():
        assert _default_of(name) == pytest.approx(value), name
    # The base memory of a replica is the measured one.
    assert SimParams().cluster.base_memory_bytes == shipped.base_memory_bytes


def test_the_defaults_cite_the_file_and_the_docs_list_every_measured_value() -> None:
    model = ROOT / "labsim" / "model"
    source = (model / "demand.py").read_text() + (model / "deployment.py").read_text()
    docs = (ROOT / "docs" / "model.md").read_text()
    assert "python -m loadtest measure" in docs
    for name in (*measured.MEASURED_FIELDS, "base_memory_bytes"):
        line = next(li for li in source.splitlines() if li.strip().startswith(f"{name}:"))
        assert "measured.json" in line, line
        assert f"`{name}`" in docs, name


def test_every_value_of_another_file_reaches_its_parameter(tmp_path: Path) -> None:
    payload = _shipped()
    # A measured round caps the request's overhead at its own mean (the overhead is the
    # round's constant part): without one, every value reaches its parameter as given.
    payload.pop("round_cpu", None)
    for name, kind in measured.MEASURED_FIELDS.items():
        changed = kind(payload["values"][name] * 3 + 1)
        payload["values"][name] = changed
        params = measured.load(_write(tmp_path, payload)).apply(SimParams())
        assert _value(params, name) == pytest.approx(changed), name
    # --set wins over the file.
    assert overrides(["held_call_bytes=5"], str(_write(tmp_path, payload)))["held_call_bytes"] == 5


def _value(params: SimParams, name: str) -> object:
    for part in ("workload", "cluster", "state"):
        owner = getattr(params, part)
        if hasattr(owner, name):
            return getattr(owner, name)
    raise AssertionError(name)


def test_a_file_names_parameters_by_section_and_may_give_only_some(tmp_path: Path) -> None:
    payload = {"values": {"cluster.connection_limit": 64, "client.max_retries": 8}}
    params = measured.load(_write(tmp_path, payload)).apply(SimParams())
    assert params.cluster.connection_limit == 64
    assert params.client.max_retries == 8
    assert params.cluster.held_call_bytes == SimParams().cluster.held_call_bytes


def test_the_replica_memory_of_a_file_and_per_architecture(tmp_path: Path) -> None:
    payload = _shipped()
    payload["replica"] = {
        "base_memory_bytes": 70_000_000,
        "base_memory_bytes_by_architecture": {"sse-store": 90_000_000},
    }
    measurement = measured.load(_write(tmp_path, payload))
    assert measurement.apply(SimParams(), "mrtr").cluster.base_memory_bytes == 70_000_000
    assert measurement.apply(SimParams(), "sse-store").cluster.base_memory_bytes == 90_000_000


def test_a_measured_round_is_the_requests_overhead_and_the_tools_work(tmp_path: Path) -> None:
    payload = _shipped()
    payload["round_cpu"] = {"mean_s": 0.010, "cv": 0.5, "kind": "lognormal"}
    params = measured.load(_write(tmp_path, payload)).apply(SimParams())
    overhead_s = payload["values"]["request_overhead_s"]
    assert params.workload.request_overhead_s == pytest.approx(overhead_s)
    tool = params.workload.round_cpu
    assert tool.kind == "lognormal"
    assert tool.mean_s + overhead_s == pytest.approx(0.010)
    # The whole round's spread is kept: the tool's std is the whole's.
    assert tool.cv * tool.mean_s == pytest.approx(0.5 * 0.010)


def test_a_round_lighter_than_the_overhead_is_all_overhead() -> None:
    tool, overhead_s = split_round(ServiceTime(0.0001, "deterministic", 0.0), 0.000186)
    assert overhead_s == pytest.approx(0.0001)
    assert tool.mean_s == 0


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ({"values": {}, "extra": 1}, "'extra'"),
        ({"values": {"held_memory_bytes": 1}}, "'held_memory_bytes'"),
        ({"values": {"cluster.nonsense": 1}}, "'cluster.nonsense'"),
        ({"replica": {"base_memory": 1}}, "replica.base_memory"),
        (
            {"round_cpu": {"mean_s": 0.01, "cv": 1, "kind": "exponential", "p99": 3}},
            "round_cpu.p99",
        ),
        ({"round_cpu": {"mean_s": 0.01, "kind": "lognormal"}}, "round_cpu needs cv"),
        ({"round_cpu": {"mean_s": 0.01, "cv": 0.3, "kind": "gamma"}}, "round_cpu.kind"),
        ({"round_cpu": {"mean_s": 0.01, "cv": 0.3, "kind": "exponential"}}, "cv of 1"),
        ({"values": {"held_call_bytes": -1}}, "held_call_bytes must be a number"),
        ({"replica": {"base_memory_bytes": 0}}, "replica.base_memory_bytes"),
    ],
)
def test_a_key_the_model_does_not_know_is_refused_by_name(
    tmp_path: Path, payload: dict, named: str
) -> None:
    with pytest.raises(ParameterError, match=named.replace("(", r"\(")):
        measured.load(_write(tmp_path, payload))


def test_an_unreadable_file_is_a_parameter_error(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="cannot read"):
        measured.load(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ParameterError, match="not JSON"):
        measured.load(tmp_path / "bad.json")


def test_set_reaches_any_parameter_by_path() -> None:
    params = SimParams().with_settings(
        {
            "cluster.health_check_interval_s": 1,
            "workload.round_cpu.mean_s": 0.002,
            "store.round_trip_s": 0.001,
            "tasks.lease_s": 20,
            "cost.vcpu_hour_usd": 0.05,
            "horizon_s": 1200,
            "client.cut_noticed_on_answer": "true",
            "tool_mix": "0.2,0.3,0.5",
        }
    )
    assert params.cluster.health_check_interval_s == 1.0
    assert params.workload.round_cpu.mean_s == 0.002
    assert params.store.round_trip_s == 0.001
    assert params.tasks.lease_s == 20
    assert params.cost.vcpu_hour_usd == 0.05
    assert params.horizon_s == 1200.0
    assert params.client.cut_noticed_on_answer is True
    assert params.workload.tool_mix == (0.2, 0.3, 0.5)
    for unknown in ("cluster.nonsense", "nonsense", "workload.round_cpu.p99"):
        with pytest.raises(ParameterError, match=unknown):
            SimParams().with_settings({unknown: 1})

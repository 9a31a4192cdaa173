"""The measured parameter file: the defaults are its values, and another file can replace them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from labsim.cli.options import overrides
from labsim.model import measured
from labsim.model.checks import ParameterError
from labsim.model.params import SimParams
from labsim.study.plan_request import PlanRequest

ROOT = Path(__file__).resolve().parents[2]


def _default_of(name: str) -> object:
    params = SimParams()
    for part in ("workload", "client", "cluster", "store", "state"):
        values = dataclasses.asdict(getattr(params, part))
        if name in values:
            return values[name]
    raise AssertionError(f"{name} is no SimParams field")


def test_the_defaults_are_the_shipped_measurement() -> None:
    shipped = measured.load()
    assert shipped.command.startswith("python -m loadtest measure")
    assert set(shipped.values) == set(measured.MEASURED_FIELDS)
    for name, value in shipped.values.items():
        assert _default_of(name) == pytest.approx(value), name
    # `labsim plan`'s base memory of a replica is the measured one.
    base = next(f for f in dataclasses.fields(PlanRequest) if f.name == "base_memory_bytes")
    assert base.default == shipped.replica["base_memory_bytes"]


def test_the_defaults_cite_the_file_and_the_docs_list_every_measured_value() -> None:
    model = ROOT / "labsim" / "model"
    source = (model / "demand.py").read_text() + (model / "deployment.py").read_text()
    model = (ROOT / "docs" / "model.md").read_text()
    assert "python -m loadtest measure" in model
    for name in measured.MEASURED_FIELDS:
        line = next(li for li in source.splitlines() if li.strip().startswith(f"{name}:"))
        assert "measured.json" in line, line
        assert f"`{name}`" in model, name


def test_another_file_changes_the_parameters(tmp_path: Path) -> None:
    payload = json.loads(measured.DEFAULT_PATH.read_text())
    payload["values"]["held_call_bytes"] = 100_000
    payload["values"]["network_rtt_s"] = 0.0
    path = tmp_path / "other.json"
    path.write_text(json.dumps(payload))
    params = measured.load(path).apply(SimParams())
    assert params.cluster.held_call_bytes == 100_000
    assert params.cluster.network_rtt_s == 0.0
    # --set wins over the file.
    assert overrides(["held_call_bytes=5"], str(path))["held_call_bytes"] == 5


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"held_call_bytes": 1}, "missing values"),
        (None, "no 'values'"),
        ("shipped", "'replica' must give base_memory_bytes"),
    ],
)
def test_a_bad_file_is_a_parameter_error(tmp_path: Path, values: object, message: str) -> None:
    if values == "shipped":  # every value, but no replica
        values = json.loads(measured.DEFAULT_PATH.read_text())["values"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"values": values}))
    with pytest.raises(ParameterError, match=message):
        measured.load(path)
    with pytest.raises(ParameterError, match="cannot read"):
        measured.load(tmp_path / "absent.json")

"""The plan's JSON document: a plan written and read back is the same plan, one of an older
format version is read with today's names, and a document of a newer version, or missing a
field, or with one the plan does not have, is refused by the field's name."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from typing import Any

import pytest

from labsim.study.capacity import plan
from labsim.study.plan import FORMAT_VERSION, Plan, PlanFormatError
from labsim.study.plan_request import PlanRequest

QUICK = {"answer_timeout_s": 20.0, "measure_s": 20.0, "replications": 2}


def request(**changes: Any) -> PlanRequest:
    """2 calls/s of 20 ms rounds on one-vCPU replicas: one replica, nothing near a limit."""
    fields: dict[str, Any] = {
        "rate_per_s": 2.0,
        "slo_p95_ms": 1000.0,
        "vcpus_per_replica": 1.0,
        "memory_gb_per_replica": 2.0,
        "round_cpu_ms": 20.0,
        "round_cpu_kind": "deterministic",
        **QUICK,
    }
    return PlanRequest(**(fields | changes))


@pytest.fixture(scope="module")
def made() -> Plan:
    """A plan with a fleet for each architecture, as `labsim plan` makes it."""
    found = plan(request(), architectures=("mrtr", "sticky"), stated={"rate_per_s"})
    return dataclasses.replace(found, command="python -m labsim plan --rate 2", elapsed_s=1.5)


def through_json(found: Plan) -> Plan:
    return Plan.from_json(json.loads(json.dumps(found.to_json())))


def test_a_plan_written_and_read_back_is_the_same_plan(made: Plan) -> None:
    assert all(answer.fleet is not None for answer in made.architectures.values())
    assert through_json(made) == made
    # Reading and writing again gives the same document, field for field.
    assert through_json(made).to_json() == made.to_json()


def test_a_plan_without_a_fleet_round_trips_too() -> None:
    below_floor = plan(request(slo_p95_ms=5.0), architectures=("mrtr",))
    (answer,) = below_floor.architectures.values()
    assert answer.fleet is None and answer.reason and not answer.meets
    assert through_json(below_floor) == below_floor
    # Three replicas' work with one allowed: the walk stops, the largest fleet tried kept.
    capped = plan(request(rate_per_s=60.0, max_replicas=1), architectures=("mrtr",))
    (answer,) = capped.architectures.values()
    assert answer.fleet is None and answer.largest_tried is not None
    assert "--max-replicas 1" in answer.reason
    assert through_json(capped) == capped


def test_the_document_keeps_its_shape(made: Plan) -> None:
    document = made.to_json()
    assert document["version"] == FORMAT_VERSION
    assert list(document) == [
        "version", "command", "request", "params", "inputs", "assumptions", "notes",
        "architectures", "tools", "elapsed_s",
    ]  # fmt: skip
    # A plan of the demo tools simulated no tool of a target.
    assert document["tools"] == {} and document["params"]["workload"]["target_tools"] == []
    mrtr = document["architectures"]["mrtr"]
    # The fleet's figures sit in the answer itself, as verify-plan and the notebooks read them.
    assert mrtr["replicas"] == 1 and mrtr["meets"] is True and "use" in mrtr
    assert mrtr["one_fewer_reason"] == "nothing smaller than 1 replica"
    assert document["request"]["round_cpu_ms"] == 20.0
    assert "arrivals: Poisson, 2 calls/s (stated: --rate)" in document["assumptions"]


def test_a_newer_format_version_is_refused(made: Plan) -> None:
    for version in (FORMAT_VERSION + 1, 0, "2"):
        document = made.to_json() | {"version": version}
        with pytest.raises(PlanFormatError, match=re.escape(f"format version {version!r}")):
            Plan.from_json(document)


def test_a_plan_of_format_version_2_is_read_without_the_targets_tools(made: Plan) -> None:
    document = copy.deepcopy(made.to_json())
    document["version"] = 2
    del document["tools"], document["params"]["workload"]["target_tools"]
    assert Plan.from_json(document) == made


def test_a_plan_of_an_older_format_version_is_read_with_todays_names(made: Plan) -> None:
    document = copy.deepcopy(made.to_json())
    document["version"] = 1
    for holder in (document["request"], document["params"]["workload"]):
        holder["think_median_s"] = holder.pop("think_time_median_s")
        holder["think_sigma"] = holder.pop("think_time_sigma")
        holder["never_answer_fraction"] = holder.pop("never_answer_share")
    assert Plan.from_json(document) == made
    # Today's names under the old version, as plans written between the two were, read too.
    assert Plan.from_json(made.to_json() | {"version": 1}) == made
    # The newest version has only today's names.
    document["version"] = FORMAT_VERSION
    with pytest.raises(PlanFormatError, match="think_median_s"):
        Plan.from_json(document)


@pytest.mark.parametrize(
    "path",
    [
        ("request", "slo_p95_ms"),
        ("request", "connection_limit"),
        ("architectures", "mrtr", "meets"),
        ("architectures", "mrtr", "one_fewer_reason"),
        ("architectures", "sticky", "p95_ms"),
        ("command",),
        ("inputs",),
    ],
)
def test_a_missing_field_is_refused_by_its_name(made: Plan, path: tuple[str, ...]) -> None:
    document = copy.deepcopy(made.to_json())
    holder = document
    for key in path[:-1]:
        holder = holder[key]
    del holder[path[-1]]
    with pytest.raises(PlanFormatError, match=re.escape(f"no '{'.'.join(path)}'")):
        Plan.from_json(document)


def test_a_field_the_plan_does_not_have_is_refused_by_its_name(made: Plan) -> None:
    document = copy.deepcopy(made.to_json())
    document["architectures"]["mrtr"]["meets_slo"] = True
    with pytest.raises(PlanFormatError, match=re.escape("architectures.mrtr: meets_slo")):
        Plan.from_json(document)


def test_a_parameter_a_plan_predates_is_the_models_default(made: Plan) -> None:
    document = copy.deepcopy(made.to_json())
    del document["params"]["cluster"]["worker_speed"]
    assert Plan.from_json(document).params.cluster.worker_speed == 1.0
    document["params"]["cluster"]["speed"] = 0.5
    with pytest.raises(PlanFormatError, match=re.escape("params.cluster: speed")):
        Plan.from_json(document)


def test_a_wrong_type_is_refused_by_its_place(made: Plan) -> None:
    document = copy.deepcopy(made.to_json())
    document["architectures"]["sticky"]["replications"] = "two"
    wrong = re.escape("architectures.sticky.replications must be int")
    with pytest.raises(PlanFormatError, match=wrong):
        Plan.from_json(document)

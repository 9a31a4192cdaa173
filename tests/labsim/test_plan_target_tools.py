"""`labsim plan` of a target's own mix: tools a parameter file measured on another server,
planned under their own names with their own rounds and work, the figures borrowed from
the lab's own server said to be borrowed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labsim.model import measured
from labsim.model.checks import ParameterError
from labsim.study.capacity import first_guess, plan, simulated
from labsim.study.plan import Plan
from labsim.study.plan_inputs import MEASURED, plan_inputs
from labsim.study.plan_request import PlanRequest, parse_tool_mix
from labsim.study.plots.plan import plan_uses

pytestmark = pytest.mark.slow


def era(rounds: float, mean_ms: float, cv: float, request_bytes: int, response_bytes: int) -> dict:
    return {
        "rounds_per_call": rounds,
        "round_cpu": {"mean_ms": mean_ms, "cv": cv, "kind": "lognormal"},
        "request_bytes_per_round": request_bytes,
        "response_bytes_per_round": response_bytes,
        "calls": 20,
        "failed": 0,
    }


#: Two tools of a server nobody on the project wrote: a form of two rounds (a question,
#: then the answer) and a tool of 10 ms of CPU in one round; the form measured in one era.
TARGET = {
    "command": "python -m loadtest measure --target http://127.0.0.1:8931/mcp --tool book_form",
    "measured_at": "2026-12-07T05:00:00Z",
    "target": "http://127.0.0.1:8931/mcp",
    "values": {"request_bytes": 380, "response_bytes": 260, "network_rtt_s": 0.0005},
    "round_cpu": {"mean_s": 0.0012, "cv": 0.5, "kind": "lognormal"},
    "tools": {
        "book_form": {"2026-07-28": era(2, 1.2, 0.5, 420, 310)},
        "crunch_numbers": {
            "2026-07-28": era(1, 10.0, 0.2, 200, 900),
            "2025-11-25": era(1, 11.0, 0.2, 210, 950),
        },
    },
}
ARCHITECTURES = ("mrtr", "sticky")


@pytest.fixture
def target_file(tmp_path: Path) -> Path:
    path = tmp_path / "target.json"
    path.write_text(json.dumps(TARGET))
    return path


def request(**mix: float) -> PlanRequest:
    fields = parse_tool_mix(",".join(f"{name}={weight}" for name, weight in mix.items()))
    return PlanRequest(
        rate_per_s=300.0, think_time_median_s=1.0, vcpus_per_replica=1.0,
        answer_timeout_s=30.0, measure_s=60.0, replications=2, max_replications=2, **fields,
    )  # fmt: skip


def test_weights_of_the_mix_are_shares_of_the_calls() -> None:
    assert parse_tool_mix("book_form=3,crunch_numbers=1") == {
        "tools": ("book_form", "crunch_numbers"),
        "tool_mix": (0.75, 0.25),
    }


def test_the_cpu_tools_work_drives_the_cpu_the_plan_guesses(target_file: Path) -> None:
    inputs = plan_inputs(measured.load(target_file), architectures=("mrtr",))

    def cpu_replicas(**mix: float) -> int:
        params = simulated(request(**mix), "mrtr", 1, inputs)
        return first_guess(request(**mix), params, "mrtr")["cpu"]

    # At 70% of one vCPU each: 300 calls/s of 2 rounds of 1.2 ms are 0.72 CPUs, of one
    # 10 ms round 3 CPUs, and half of each 1.86.
    assert cpu_replicas(book_form=1) == 2
    assert cpu_replicas(crunch_numbers=1) == 5
    assert cpu_replicas(book_form=1, crunch_numbers=1) == 3


def test_a_targets_mix_is_planned_under_its_own_names(target_file: Path) -> None:
    inputs = plan_inputs(measured.load(target_file), architectures=ARCHITECTURES)
    answer = plan(request(book_form=1, crunch_numbers=1), inputs, ARCHITECTURES)
    assert answer.request.tools == ("book_form", "crunch_numbers")
    for architecture in ARCHITECTURES:
        tools = {tool.name: tool for tool in answer.tools[architecture]}
        assert tools["book_form"].requests() == 2 and tools["crunch_numbers"].requests() == 1
        assert (tools["book_form"].request_bytes, tools["book_form"].response_bytes) == (420, 310)
    # Each architecture takes its era's work: the legacy one the 2025-11-25 figures.
    work_ms = {
        a: {t.name: t.round_cpu.mean_s * 1e3 for t in answer.tools[a]} for a in ARCHITECTURES
    }
    overhead_ms = answer.params.workload.request_overhead_s * 1e3
    assert work_ms["mrtr"]["crunch_numbers"] == pytest.approx(10.0 - overhead_ms)
    assert work_ms["sticky"]["crunch_numbers"] == pytest.approx(11.0 - overhead_ms)
    assert any("book_form: 2025-11-25 not measured" in note for note in answer.notes)
    # The CPU tool's work binds: the fleet is the CPU's, well over one replica.
    fleet = answer.architectures["mrtr"].fleet
    assert fleet is not None and fleet.replicas >= 3
    assert answer.architectures["mrtr"].binding == "cpu"
    rows = {row.what: row for row in answer.inputs}
    assert "server work per round, demo tools (none in the mix)" in rows
    assert rows["tool crunch_numbers, 2026-07-28 (mrtr)"].kind == MEASURED
    assert "10 ms" in rows["tool crunch_numbers, 2026-07-28 (mrtr)"].value
    assert rows["tool book_form, 2026-07-28 (mrtr, sticky)"].source.startswith(str(target_file))
    for borrowed in ("of which the request's overhead", "memory per held legacy call"):
        assert rows[borrowed].source.startswith("borrowed from the lab's own server: ")
    assert rows["time per request outside the replica"].source.startswith(str(target_file))
    # The document records each tool's figures and reads back whole.
    document = json.loads(json.dumps(answer.to_json()))
    assert [t["name"] for t in document["tools"]["mrtr"]] == ["book_form", "crunch_numbers"]
    assert Plan.from_json(document) == answer
    # The figure names them too.
    figure = plan_uses(answer)
    assert figure.texts[0].get_text() == "300 calls/s: book_form 50%, crunch_numbers 50%"


def test_a_name_neither_measured_nor_demo_is_refused_naming_both(target_file: Path) -> None:
    inputs = plan_inputs(measured.load(target_file), architectures=("mrtr",))
    with pytest.raises(ParameterError) as refused:
        plan(request(refund=1), inputs, ("mrtr",))
    said = str(refused.value)
    assert "unknown tools ['refund']" in said
    assert "measured book_form, crunch_numbers" in said and "get_weather" in said

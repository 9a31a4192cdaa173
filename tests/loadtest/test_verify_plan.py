"""verify-plan without a cluster: a plan of `labsim plan --json` read, mapped onto the lab's
demo tools, scaled to what a machine hosts, and a live run's calls judged as the plan
judges its simulation."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from labsim.model.service_time import ServiceTime
from labsim.model.tools import SimTool, target_tool
from labsim.study.constraints import Limits
from labsim.study.plan import Plan
from loadtest.__main__ import build_parser
from loadtest.cli.runs import config_from
from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.users.simulated_user import tool_arguments
from loadtest.verify.check import judge_sizes
from loadtest.verify.deployment_verdict import held
from loadtest.verify.hosting import Hosting
from loadtest.verify.live_case import (
    cpu_cores_needed,
    live_config,
    live_tool_work,
    live_tools,
    overhead_ms,
    scale_case,
    scenario_command,
)
from loadtest.verify.live_verdict import LiveRun, judge_run
from loadtest.verify.plan_file import parse_plan, round_ms, tool_shares
from server.tools.rounds import ROUNDS_MAX_ROUNDS

pytestmark = pytest.mark.slow

WEATHER_PLACES = {"Paris", "Lagos", "Lima", "Oslo", "Pune"}


@pytest.fixture(scope="module")
def plan_document(tmp_path_factory: Any) -> dict[str, Any]:
    """A small CPU-bound plan as `labsim plan --json` writes it: 2 replicas, one fewer 1."""
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    command = [
        sys.executable, "-m", "labsim", "plan", "--rate", "45", "--think-time-median-s", "0.3",
        "--think-time-sigma", "0.5", "--never-answer", "0", "--slo-p95-ms", "100",
        "--round-cpu-ms", "8", "--round-cpu-cv", "0.3", "--round-cpu-kind", "lognormal",
        "--vcpus", "1", "--connection-limit", "64", "--tool-mix", "get_weather=1",
        "--measure-s", "10", "--replications", "2", "--max-replications", "2",
        "--json", str(out),
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return dict(json.loads(out.read_text()))


def test_a_plan_is_read_with_its_workload_slo_and_answers(plan_document: dict) -> None:
    plan = parse_plan(plan_document)
    assert plan.request.rate_per_s == 45 and tool_shares(plan) == {"get_weather": 1.0}
    assert round_ms(plan) == pytest.approx(8.0)
    # The model's tool part is the round less the request's overhead it split off.
    assert live_tool_work(plan).mean_ms + overhead_ms(plan) == pytest.approx(8.0)
    assert plan.request.slo_p95_ms == 100 and plan.request.connection_limit == 64
    for answer in plan.architectures.values():
        assert answer.replicas is not None and answer.one_fewer is not None
        assert answer.one_fewer.replicas == answer.replicas - 1


@pytest.mark.parametrize(
    ("path", "named"),
    [(("request", "rate_per_s"), "request.rate_per_s"), (("params",), "'params'")],
)
def test_a_plan_missing_a_field_is_refused_by_its_name(
    plan_document: dict, path: tuple[str, ...], named: str
) -> None:
    broken = copy.deepcopy(plan_document)
    holder = broken
    for key in path[:-1]:
        holder = holder[key]
    del holder[path[-1]]
    with pytest.raises(LoadTestError, match=named.replace(".", r"\.")):
        parse_plan(broken)


def test_tools_with_work_are_played_by_rounds_in_their_own_shapes(plan_document: dict) -> None:
    document = copy.deepcopy(plan_document)
    document["request"]["tools"] = ["crunch", "get_weather", "link_accounts"]
    document["request"]["tool_mix"] = [0.5, 0.3, 0.2]
    tools, notes = live_tools(parse_plan(document))
    # One round; two rounds, one question; two rounds, two questions asked together.
    assert tools == pytest.approx({"rounds/1x1": 0.5, "rounds/2x1": 0.3, "rounds/2x2": 0.2})
    assert "get_weather -> rounds/2x1" in notes[0] and "link_accounts -> rounds/2x2" in notes[0]
    document["request"]["tools"] = ["update_work_item"]
    document["request"]["tool_mix"] = [1.0]
    tools, notes = live_tools(parse_plan(document))
    assert tools == {"rounds/3x1": 1.0} and "update_work_item -> rounds/3x1" in notes[0]


def test_the_live_run_is_the_plans_workload_and_its_command_reproduces_it(
    plan_document: dict,
) -> None:
    plan = parse_plan(plan_document)
    case = scale_case(plan, "mrtr", Hosting(max_rate_per_s=1000, cpu_cores=2))
    config = live_config(plan, case, case.replicas, 30.0)
    assert (config.rate_per_s, config.max_connections, config.replicas) == (45, 64, case.replicas)
    assert config.tool_mix == {"rounds/2x1": 1.0}
    assert config.tool_cpu_ms == pytest.approx(plan.params.workload.round_cpu.mean_s * 1e3)
    # One worker: the replica's event loop, every round's work on it.
    assert config.cpu_workers is None and config.cpu_inline_max_ms and config.cpu_inline_max_ms > 8
    words = scenario_command(config).split()[3:]  # after `python -m loadtest`
    assert config_from(build_parser().parse_args(words)) == config


def test_a_plan_too_big_for_the_machine_is_scaled_down_openly(plan_document: dict) -> None:
    document = copy.deepcopy(plan_document)
    answer = document["architectures"]["mrtr"]
    answer["replicas"], answer["one_fewer"]["replicas"] = 8, 7
    plan = parse_plan(document)
    case = scale_case(plan, "mrtr", Hosting(max_replicas=3, cpu_cores=8))
    assert case.replicas == 3 and case.one_fewer == 2
    # The load per replica is the plan's.
    assert case.rate_per_s / case.replicas == pytest.approx(45 / 8)
    assert any("scaled down" in note and "replicas" in note for note in case.notes)
    with pytest.raises(LoadTestError, match="cannot host one replica's share"):
        scale_case(plan, "mrtr", Hosting(cpu_cores=0.01))


def _call(outcome: str, latency_ms: float, started: float = 10.0) -> dict[str, Any]:
    return {"outcome": outcome, "latency_ms": latency_ms, "started": started, "error": ""}


def _run(calls: list[dict[str, Any]], wait_share: float = 0.05) -> LiveRun:
    cpu = {"cpu_s": 1.0, "cpu_wait_s": wait_share / (1 - wait_share)}
    return LiveRun(
        replicas=1,
        calls=calls,
        window_s=(0.0, 20.0),
        balancer={"down_marks": 0, "replica_5xx": 0, "balancer_5xx": 0},
        per_replica={
            "r1": {
                "peak_connections": 3,
                "peak_rss_bytes": 60 * 2**20,
                "cpu_utilization": 0.3,
                "cpu_wait_share": wait_share,
                **cpu,
            }
        },
        rate_per_s=len(calls) / 20.0,
        workers_per_replica=1,
    )


def test_failed_and_lost_calls_count_as_misses_in_the_percentiles(plan_document: dict) -> None:
    slo = Limits.of(parse_plan(plan_document).request)
    fast = [_call("completed", 10.0) for _ in range(90)]
    judged = judge_run(_run(fast + [_call("failed", 1.0)] * 5 + [_call("lost", 1.0)] * 5), slo, 0.2)
    live = judged["live"]
    # One call in ten missed: the p95 is a miss (null), though every completed call was fast.
    assert live["p95_ms"] is None and live["p95_completed_ms"] == 10.0
    assert live["completed_share"] == pytest.approx(0.9)
    assert not live["meets_slo"] and live["broke"] == ["latency", "completion"]
    # Calls whose user never answered are neither completed nor missed.
    judged = judge_run(_run(fast + [_call("abandoned", 0.0)] * 10), slo, 0.2)
    assert judged["live"]["completed_share"] == 1.0 and judged["live"]["meets_slo"]
    assert judged["judged"]


def test_a_run_whose_replicas_waited_for_the_cpu_is_not_judged(plan_document: dict) -> None:
    slo = Limits.of(parse_plan(plan_document).request)
    calls = [_call("completed", 10.0) for _ in range(100)]
    # Half its busy time waiting: a second over 100 calls, 10 ms a call, a tenth of the SLO.
    starved = judge_run(_run(calls, wait_share=0.5), slo, 0.2)
    assert starved["judged"] is False and "waited for a CPU 50%" in starved["reason"]
    assert judge_run(_run(calls, wait_share=0.5), slo, 0.6)["judged"]
    # As long a share of busy time, but a wait the calls hardly notice: judged.
    assert judge_run(_run(calls, wait_share=0.5), slo, 0.2, max_cpu_wait_of_slo=0.2)["judged"]


def test_a_load_generator_that_fell_behind_is_not_judged(plan_document: dict) -> None:
    slo = Limits.of(parse_plan(plan_document).request)
    run = _run([_call("completed", 10.0) for _ in range(100)])
    run.rate_per_s = 20.0  # 400 calls asked in the window, 100 started
    judged = judge_run(run, slo, 0.2)
    assert not judged["judged"] and "fell behind" in judged["reason"]
    assert math.isclose(judged["live"]["offered_per_s"], 5.0)


def test_verify_plan_refuses_a_file_that_is_not_a_plan(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"version": 1}))
    result = subprocess.run(
        [sys.executable, "-m", "loadtest", "verify-plan", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "no 'request'" in result.stderr


def test_a_worker_slower_than_a_vcpu_is_a_core_working_longer(plan_document: dict) -> None:
    document = copy.deepcopy(plan_document)
    document["params"]["cluster"]["worker_speed"] = 0.5
    plan = parse_plan(document)
    case = scale_case(plan, "mrtr", Hosting(max_rate_per_s=1000, cpu_cores=8))
    config = live_config(plan, case, case.replicas, 30.0)
    # The whole round takes twice as long; the request's own part runs at full speed live.
    whole_ms = config.tool_cpu_ms + overhead_ms(plan)
    assert whole_ms == pytest.approx(2 * 8.0)
    assert any("0.5 vCPU" in note for note in case.notes)


def test_an_architecture_the_plan_gives_no_fleet_is_not_run(plan_document: dict) -> None:
    from loadtest.verify.check import verify_plan

    document = copy.deepcopy(plan_document)
    answered = document["architectures"]["mrtr"]
    kept = ("first_guess", "latency_floor_p95_ms", "base_memory_bytes", "simulated_sizes")
    document["architectures"] = {
        "mrtr": {k: answered[k] for k in kept}
        | {"replicas": None, "meets": False, "binding": "latency"}
        | {"reason": "below the latency floor"}
    }
    verified = verify_plan(parse_plan(document), judged_s=1.0, progress=lambda line: None)
    mrtr = verified["architectures"]["mrtr"]
    assert mrtr["planned"] is False and "below the latency floor" in mrtr["reason"]
    assert not verified["judged"] and "none of the architectures" in verified["reason"]


def test_a_plan_of_large_requests_pads_the_live_calls_arguments(plan_document: dict) -> None:
    big = copy.deepcopy(plan_document)
    big["params"]["workload"]["request_bytes"] = 300_445
    plan = parse_plan(big)
    case = scale_case(plan, "sticky", Hosting(max_rate_per_s=1000, cpu_cores=2))
    config = live_config(plan, case, case.replicas, 30.0)
    # The rounds' work is reading the documents: get_weather plays itself, not quote.
    assert config.tool_mix == {"get_weather": 1.0}
    assert config.argument_bytes == 300_000
    assert any("padded to 300,000 bytes" in note for note in case.notes)
    words = scenario_command(config).split()[3:]
    assert config_from(build_parser().parse_args(words)) == config
    # The lab's own request size pads nothing.
    assert live_config(parse_plan(plan_document), case, case.replicas, 30.0).argument_bytes == 0


def test_padded_arguments_reach_their_size_and_other_tools_are_refused() -> None:
    rng = random.Random(1)
    padded = tool_arguments("get_weather", rng, argument_bytes=10_000)
    assert len(padded["location"]) == 10_000 and padded["location"].strip() in WEATHER_PLACES
    assert tool_arguments("get_weather", rng)["location"] in WEATHER_PLACES
    with pytest.raises(LoadTestError, match="pads only get_weather"):
        LoadTestConfig(tool_mix={"get_weather": 1.0, "quote": 1.0}, argument_bytes=10)


#: Objects of a plan whose keys are data (constraints, cost items, architectures), not fields.
DATA_KEYED = {"first_guess", "use", "cost_breakdown", "architectures"}


def field_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every field of a plan's document, nested ones alike."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if not (path and path[-1] in DATA_KEYED):
                yield (*path, key)
            yield from field_paths(inner, (*path, key))
    elif isinstance(value, list):
        for k, inner in enumerate(value):
            yield from field_paths(inner, (*path, k))


def test_verify_plan_reads_every_field_of_the_plan_as_labsim_writes_it(
    plan_document: dict,
) -> None:
    plan = parse_plan(plan_document)
    # Read, then written again: the same document, so nothing written went unread.
    assert json.loads(json.dumps(plan.to_json())) == plan_document
    paths = list(field_paths(plan_document))
    assert ("architectures", "mrtr", "one_fewer", "meets") in paths
    assert ("params", "workload", "round_cpu", "mean_s") in paths
    for path in paths:
        renamed = copy.deepcopy(plan_document)
        holder = renamed
        for key in path[:-1]:
            holder = holder[key]
        holder[f"{path[-1]}_renamed"] = holder.pop(path[-1])
        with pytest.raises(LoadTestError, match=re.escape(str(path[-1]))):
            parse_plan(renamed)


def test_a_live_run_is_judged_by_the_rule_the_plan_judged_by(plan_document: dict) -> None:
    from labsim.study.plan_verdict import judge

    plan = parse_plan(plan_document)
    limits = Limits.of(plan.request)
    base_bytes = 60 * 2**20
    # Past the CPU target, past the replica's memory by more, and slower than the SLO.
    slow_ms, utilization, rss = 1.5 * limits.slo_p95_ms, 0.9, 1.5 * limits.memory_bytes
    live = _run([_call("completed", slow_ms) for _ in range(100)])
    live.per_replica["r1"].update(cpu_utilization=utilization, peak_rss_bytes=rss)
    simulated = {
        "p95_latency_all_s": slow_ms / 1e3,
        "p50_latency_all_s": slow_ms / 1e3,
        "p95_latency_s": slow_ms / 1e3,
        "completed_share": 1.0,
        "utilization": utilization,
        "peak_replica_held_bytes": rss - base_bytes,
        "peak_replica_connections": 3,
        "refused_requests": 0,
        "down_marks": 0,
        "full_marks": 0,
    }
    verdict = judge(plan.request, 1, [simulated], base_bytes)
    judged = judge_run(live, limits, 1.0)["live"]
    # The limits first, the furthest past first; then the SLO's.
    assert verdict.broke() == judged["broke"] == ["memory", "cpu", "latency"]
    assert verdict.use == pytest.approx(judged["use"], rel=1e-3)


def _with_measured_tool(plan_document: dict, tool: SimTool, share: float) -> dict:
    """The plan with a target's tool measured beside get_weather, `share` of the calls."""
    document = copy.deepcopy(plan_document)
    document["tools"] = {arch: [dataclasses.asdict(tool)] for arch in document["architectures"]}
    document["request"]["tools"] = [tool.name, "get_weather"]
    document["request"]["tool_mix"] = [share, 1 - share]
    return document


def test_a_targets_tool_is_played_in_both_its_shapes_with_its_own_work(
    plan_document: dict,
) -> None:
    # 2.2 rounds a call: three rounds in one call of five, two in the rest.
    measured = target_tool("book_room", 2.2, ServiceTime(mean_s=0.004), questions_per_round=2)
    plan = parse_plan(_with_measured_tool(plan_document, measured, 0.5))
    tools, notes = live_tools(plan)
    assert tools == pytest.approx({"rounds/3x2": 0.1, "rounds/2x2": 0.4, "rounds/2x1": 0.5})
    assert "book_room -> rounds/3x2 (20%), rounds/2x2 (80%)" in notes[0]
    # Every live round spends the mean of the tools' own works over the mix's rounds.
    weather_ms = plan.params.workload.round_cpu.mean_s * 1e3
    mean_ms = (0.5 * 2.2 * 4.0 + 0.5 * 2 * weather_ms) / (0.5 * 2.2 + 0.5 * 2)
    assert live_tool_work(plan).mean_ms == pytest.approx(mean_ms)
    assert any("own work per round differs" in note for note in notes)


def test_a_tool_beyond_the_rounds_tools_caps_is_refused_naming_it(plan_document: dict) -> None:
    measured = target_tool("wizard", ROUNDS_MAX_ROUNDS + 1, ServiceTime(mean_s=0.004))
    with pytest.raises(LoadTestError, match=f"'wizard'.*1 to {ROUNDS_MAX_ROUNDS} rounds"):
        live_tools(parse_plan(_with_measured_tool(plan_document, measured, 0.5)))


def test_the_cpu_a_plan_needs_counts_each_tools_rounds_and_own_work(plan_document: dict) -> None:
    plan = parse_plan(plan_document)  # get_weather: two rounds of 8 ms
    assert cpu_cores_needed(plan, 10) == pytest.approx(10 * 2 * 8 / 1e3)
    heavy = target_tool("book_room", 3, ServiceTime(mean_s=0.020))
    measured = parse_plan(_with_measured_tool(plan_document, heavy, 1.0))
    whole_ms = 20 + overhead_ms(measured)
    assert cpu_cores_needed(measured, 10) == pytest.approx(10 * 3 * whole_ms / 1e3)


def test_a_size_the_plan_left_undecided_is_reported_but_not_judged(plan_document: dict) -> None:
    answer = Plan.from_json(plan_document).architectures["mrtr"]
    assert answer.fleet is not None and answer.one_fewer is not None
    fleet = dataclasses.replace(answer.fleet, marginal=False)
    fewer = dataclasses.replace(answer.one_fewer, marginal=False)
    assert fleet.meets and not fewer.meets
    meets, misses = {"meets": True}, {"meets": False}
    undecided_fewer = dataclasses.replace(fewer, marginal=True)

    def judged(at_n: dict, one_fewer: dict | None, said_fewer: Any = fewer) -> dict[str, Any]:
        entry: dict[str, Any] = {"notes": ["before"]}
        sizes = {"held_at_n": (at_n, fleet)}
        if one_fewer is not None:
            sizes["held_at_one_fewer"] = (one_fewer, said_fewer)
        judge_sizes(entry, sizes)
        return entry

    # Decided: the live runs bear the plan out, or not.
    entry = judged(meets, meets)
    assert (entry["held_at_n"], entry["held_at_one_fewer"], entry["verdict_held"]) == (
        True,
        False,
        False,
    )
    assert judged(meets, misses)["verdict_held"] is True

    # Undecided one fewer: met or missed live, it is a note, and the fleet's verdict stands.
    for live in (meets, misses):
        entry = judged(meets, live, undecided_fewer)
        assert (entry["held_at_one_fewer"], entry["verdict_held"]) == (None, True)
        assert entry["notes"][0] == "before" and "left them undecided" in entry["notes"][1]
    assert judged(misses, meets, undecided_fewer)["verdict_held"] is False

    # Nothing decided: nothing judged.
    entry = {}
    judge_sizes(entry, {"held_at_n": (meets, dataclasses.replace(fleet, marginal=True))})
    assert entry["judged"] is False and entry["verdict_held"] is None
    assert "marginal after" in entry["reason"]

    # A deployment's check says the same of an undecided size.
    assert held(misses | {"constraints": {}}, undecided_fewer) is None
    assert held(misses | {"constraints": {}}, fewer) is True

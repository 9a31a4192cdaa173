"""`python -m labsim`: its commands, their output, and one-line errors for bad parameters."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from labsim.cli import main as cli
from labsim.cli import plan as plan_command
from labsim.cli.options import round_overrides
from labsim.model.checks import ParameterError
from labsim.model.demand import WorkloadParams
from labsim.study import validation
from labsim.study.plan_request import PlanRequest

ROOT = Path(__file__).resolve().parents[2]


def labsim(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "labsim", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout_s,
    )


def mmc_rates(arrival: str, service: str, servers: str) -> list[str]:
    return ["--arrival-rate", arrival, "--service-rate", service, "--servers", servers]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["mmc", "--arrival-rate", "5", "--service-rate", "1", "--servers", "4"],
            "rho = 1.25 >= 1",
        ),
        (["mmc", "--arrival-rate", "-1", "--service-rate", "1", "--servers", "1"], "rates must be"),
        (["mmc", "--arrival-rate", "1", "--service-rate", "2", "--servers", "0"], "servers"),
        (
            ["mmc", "--arrival-rate", "fast", "--service-rate", "1", "--servers", "1"],
            "invalid float",
        ),
        (["compare", "--scenario", "meteor-strike"], "unknown scenario 'meteor-strike'"),
        (["compare", "--replications", "0"], "replications must be"),
        (["compare", "--scenario", "steady", "--set", "replicas=0"], "replicas must be"),
        (["compare", "--scenario", "steady", "--set", "arrival_rate_per_s=-3"], "arrival_rate"),
    ],
)
@pytest.mark.slow
def test_bad_parameters_give_one_line_and_exit_status_2(args: list[str], message: str) -> None:
    done = labsim(*args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert message in lines[0]
    assert lines[0].startswith("labsim")


@pytest.mark.slow
def test_mmc_prints_json_with_waits_close_to_erlang_c() -> None:
    done = labsim(
        "mmc", "--arrival-rate", "1", "--service-rate", "1", "--servers", "2",
        "--calls", "20000", "--seed", "3", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["theory_mean_wait_s"] == pytest.approx(1 / 3)
    assert report["mean_wait_s"] == pytest.approx(report["theory_mean_wait_s"], rel=0.15)
    assert report["mean_response_s"] == pytest.approx(report["mean_wait_s"] + 1.0, rel=0.05)
    low, high = report["mean_wait_ci95_s"]
    assert low < report["mean_wait_s"] < high
    assert report["utilization"] == pytest.approx(0.5)
    assert report["measured_utilization"] == pytest.approx(0.5, rel=0.05)


@pytest.mark.slow
def test_compare_prints_a_table_and_writes_json_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "crash.json"
    figures = tmp_path / "figures"
    done = labsim(
        "compare", "--scenario", "crash", "--replications", "2",
        "--json", str(out), "--plots", str(figures),
        "--set", "horizon_s=400", "--set", "warmup_s=100", "--set", "at_s=200",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "== crash" in done.stdout
    for heading in ("sse-store", "sticky", "mrtr", "state losses", "cost per million calls"):
        assert heading in done.stdout
    assert "elapsed:" in done.stdout
    payload = json.loads(out.read_text())
    assert payload["overrides"] == {"horizon_s": 400, "warmup_s": 100, "at_s": 200}
    metrics = {(r["architecture"], r["metric"]): r["mean"] for r in payload["results"]}
    assert metrics[("mrtr", "state_losses")] == 0
    assert metrics[("sticky", "state_losses")] > 0
    written = {p.name for p in figures.iterdir()}
    assert {"comparison_grid.png", "cost_bars.png", "timeline_crash.png"} <= written


def test_validate_exits_non_zero_when_theory_falls_outside(monkeypatch, capsys) -> None:
    right = validation.mmc_case(0.5, 1, 2_000)
    wrong = dataclasses.replace(right, name="a wrong theory", theory=right.theory * 3)
    monkeypatch.setattr(validation, "standard_cases", lambda scale: [right, wrong])
    status = cli.main(["validate", "--replications", "3"])
    printed = capsys.readouterr().out
    assert status == 1
    assert "1 of 2 cases agree with theory" in printed
    monkeypatch.setattr(validation, "standard_cases", lambda scale: [right])
    assert cli.main(["validate", "--replications", "3"]) == 0


@pytest.mark.slow
def test_bench_reports_each_architecture_against_the_bare_loop() -> None:
    done = labsim("bench", "--horizon-s", "300", "--repeats", "1", "--no-plan")
    assert done.returncode == 0, done.stderr
    for architecture in ("sse-store", "sticky", "mrtr"):
        assert architecture in done.stdout
    assert "slowdown" in done.stdout


@pytest.mark.slow
def test_scenarios_are_listed() -> None:
    done = labsim("scenarios")
    assert done.returncode == 0
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert names == [
        "steady",
        "crash",
        "store-outage",
        "rolling-upgrade",
        "overload",
        "idle-timeout",
        "persistent",
        "persistent-crash",
        "persistent-store-outage",
        "autoscale",
    ]


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Each sub-command of `python -m labsim` and its parser."""
    commands = next(
        action for action in cli.parser()._actions if isinstance(action, argparse._SubParsersAction)
    )
    return dict(commands.choices)


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_option_has_help_and_the_help_shows_its_default(command: str) -> None:
    parser = _commands()[command]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue  # an older name of a flag, accepted and not shown
        assert action.help, f"{command} {action.option_strings[0]} has no help"
        shows_value = action.default not in (None, [], False, True)
        if shows_value:
            assert f"(default: {action.default})" in text, (command, action.option_strings)


def test_the_plan_flags_and_the_request_fields_are_one_another() -> None:
    fields = {field.name for field in dataclasses.fields(PlanRequest)}
    set_by_flags = {name for names in plan_command.request_flags().values() for name in names}
    assert set_by_flags == fields
    planning = _commands()["plan"]
    flags = {action.dest for action in planning._actions if action.option_strings} - {"help"}
    # A flag of one field keeps its value under the field's name; --tool-mix, of two,
    # under its own.
    request_dests = {
        names[0] if len(names) == 1 else flag.removeprefix("--").replace("-", "_")
        for flag, names in plan_command.request_flags().items()
    }
    # A flag sets a field of the request, or is one of the documented command-only options.
    assert flags - request_dests == set(plan_command.COMMAND_ONLY)
    # Today's flag names are kept.
    for flag in ("--rate", "--never-answer", "--slo-completed", "--vcpus", "--target-cpu"):
        assert flag in plan_command.request_flags()


def test_plan_with_no_flags_asks_the_default_request_and_each_flag_sets_its_field() -> None:
    planning = cli.parser()
    default = plan_command.request_from(planning.parse_args(["plan"]))
    assert default == PlanRequest()
    changed = {
        "--rate": ("7.5", "rate_per_s", 7.5),
        "--think-time-median-s": ("30", "think_time_median_s", 30.0),
        "--connection-limit": ("64", "connection_limit", 64),
        "--never-answer": ("0.1", "never_answer_share", 0.1),
        "--max-replicas": ("40", "max_replicas", 40),
        "--round-cpu-ms": ("12.5", "round_cpu_ms", 12.5),
        "--round-cpu-cv": ("0.4", "round_cpu_cv", 0.4),
        "--round-cpu-kind": ("lognormal", "round_cpu_kind", "lognormal"),
    }
    for flag, (text, name, value) in changed.items():
        request = plan_command.request_from(planning.parse_args(["plan", flag, text]))
        assert request == dataclasses.replace(default, **{name: value}), flag
    mixed = plan_command.request_from(
        planning.parse_args(["plan", "--tool-mix", "get_weather=0.25,crunch=0.75"])
    )
    assert (mixed.tools, mixed.tool_mix) == (("get_weather", "crunch"), (0.25, 0.75))


def test_importing_labsim_loads_the_model_and_none_of_the_study() -> None:
    code = (
        "import sys, labsim\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('labsim.study'))))\n"
        "print('labsim.model.simulation' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.splitlines() == ["", "True"]


def test_compare_takes_the_round_as_the_user_states_it() -> None:
    def settings(*flags: str) -> dict:
        return round_overrides(cli.parser().parse_args(["compare", *flags]), {})

    assert settings() == {}
    stated = settings(
        "--round-cpu-ms", "20", "--round-cpu-cv", "0.5", "--round-cpu-kind", "lognormal"
    )
    tool, overhead_s = stated["workload.round_cpu"], stated["request_overhead_s"]
    # The whole round is the overhead every request pays plus the tool's part.
    assert overhead_s == WorkloadParams().request_overhead_s
    assert tool.mean_s + overhead_s == pytest.approx(0.020)
    assert tool.kind == "lognormal" and tool.cv * tool.mean_s == pytest.approx(0.5 * 0.020)
    with pytest.raises(ParameterError, match="need --round-cpu-ms"):
        settings("--round-cpu-cv", "0.5")
    with pytest.raises(ParameterError, match="exponential"):
        settings("--round-cpu-ms", "5", "--round-cpu-kind", "exponential", "--round-cpu-cv", "2")

"""One way to state a setting: every configuration of the three packages has a flag for each
field (or says why not) and a field for each flag, and `to_argv` writes a configuration back
as the command line that gives it, for the defaults and with every field changed."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import Any

import pytest

from labsim.cli.main import parser as labsim_parser
from labsim.cli.plan import request_from
from labsim.study.plan_request import PlanRequest, parse_tool_mix
from loadtest.__main__ import build_parser
from loadtest.cli.options import RUN_SETTINGS
from loadtest.cli.runs import config_from
from loadtest.config import LoadTestConfig, tool_mix_of
from loadtest.harness.cluster import Cluster
from loadtest.harness.haproxy import HAProxy
from loadtest.harness.redis_server import RedisServer
from loadtest.swarm.plan import SwarmPlan
from loadtest.verify.hosting import Hosting
from loadtest.verify.target_settings import TargetSettings
from server.__main__ import replica_config, serve_parser
from server.config import ServerConfig
from server.flags import add_flags, flags_of, setting, setting_of, to_argv, values_from_flags
from server.keys import parse_state_keys
from server.listener import Listener
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env


@pytest.fixture(autouse=True)
def _keys_and_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys and secret from the environment, as a deployed replica has them."""
    monkeypatch.setenv("MRTR_STATE_KEYS", state_keys_env(KEY_A))
    monkeypatch.setenv("MRTR_JWT_SECRET", JWT_SECRET)


def subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    found: argparse.ArgumentParser = commands.choices[name]
    return found


def shown_flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each flag `--help` shows, and the destination it sets."""
    return {
        flag: action.dest
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    }


def flag_mismatches(config_type: type, parser: argparse.ArgumentParser, own: set[str]) -> list[str]:
    """A field with a flag the parser lacks, a field without one that does not say why, a
    flag of the parser that is neither a field's nor one of the command's `own` options."""
    declared = flags_of(config_type)
    shown = shown_flags(parser)
    wrong = [f"field {name}: no {flag}" for name, flag in declared.items() if flag not in shown]
    wrong += [
        f"field {field.name}: no flag, and its help says not why"
        for field in dataclasses.fields(config_type)
        if not setting_of(field).cli and "flag" not in setting_of(field).help
    ]
    wrong += [f"flag {flag}: no field" for flag in shown if flag not in {*declared.values(), *own}]
    return wrong


#: A value for a setting unset by default (None), by the type it takes when set.
WHEN_SET: dict[object, object] = {int: 7, float: 1.5, str: "other"}


def another(
    value: object, choices: tuple[object, ...] | None = None, hint: object = None
) -> object:
    """A value of the same type as `value` (or, for None, of the type `hint` allows) that
    is not it."""
    if choices:
        return next(choice for choice in choices if choice != value)
    if value is None:
        settable = [kind for kind in typing.get_args(hint) if kind in WHEN_SET]
        if settable:
            return WHEN_SET[settable[0]]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 3
    if isinstance(value, float):
        return value * 2 + 0.25
    if isinstance(value, str):
        return value + "-other"
    raise TypeError(f"no other value for {value!r}: name one")


def every_field_changed(config: Any, named: dict[str, object], keep: tuple[str, ...] = ()) -> Any:
    """`config` with every field that has a flag changed: `named` values, else `another`."""
    changes = {}
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        if not setting_of(field).cli or field.name in keep:
            continue
        if field.name in named:
            changes[field.name] = named[field.name]
        else:
            value = getattr(config, field.name)
            changes[field.name] = another(value, setting_of(field).choices, hints[field.name])
    changed = dataclasses.replace(config, **changes)
    same = [name for name in changes if getattr(changed, name) == getattr(config, name)]
    assert not same, f"not changed: {same}"
    return changed


# -- the server -----------------------------------------------------------------------------


def served(argv: list[str]) -> ServerConfig:
    args = serve_parser().parse_args(argv)
    return replica_config(args, Listener(**values_from_flags(Listener, args)))


SERVER_VALUES: dict[str, object] = {
    "tool_version": 2,
    "task_store": "redis://127.0.0.1:6399/3",
    "legacy_store": "redis://127.0.0.1:6399/4",
    "allowed_origins": ("http://a.example", "https://b.example:8443"),
    "cpu_inline_max_ms": 0.0,
}


def test_the_servers_flags_and_fields_are_one_another() -> None:
    assert flag_mismatches(ServerConfig, serve_parser(), set(flags_of(Listener).values())) == []


def test_the_servers_configuration_round_trips_through_its_command_line() -> None:
    default = served([])
    assert to_argv(default) == ["--replica-id", "replica-8000"]
    assert served(to_argv(default)) == default
    changed = every_field_changed(default, SERVER_VALUES)
    assert served(to_argv(changed)) == changed


# -- the load test ---------------------------------------------------------------------------

#: Values the load test's checks accept together (a padded argument needs tools that take it).
LOADTEST_VALUES: dict[str, object] = {
    "tool_mix": {"get_weather": 2.0, "ask_capital": 0.5},
    "users": 9,
    "seed": 11,
    "max_connections": 40,
    "cpu_workers": 3,
    "cpu_inline_max_ms": 0.5,
    "never_answer_share": 0.2,
    "scenario": "crash",
}


def run_settings_of(command: argparse.ArgumentParser) -> list[str]:
    return [
        a.dest for g in command._action_groups if g.title == RUN_SETTINGS for a in g._group_actions
    ]


@pytest.mark.parametrize("name", ["cluster", "scenario", "compare", "swarm"])
def test_each_load_test_command_round_trips_a_configuration(name: str) -> None:
    command = subcommand(build_parser(), name)
    taken = [dest for dest in run_settings_of(command) if dest != "scenario" or name == "compare"]
    defaults = {"scenario": "rolling-upgrade"} if name == "compare" else {}
    head = {"cluster": ["cluster", "up"], "scenario": ["scenario", "steady"]}.get(name, [name])

    def parsed(argv: list[str]) -> LoadTestConfig:
        return config_from(build_parser().parse_args([*head, *argv]))

    base = parsed([])
    assert to_argv(base, only=taken, defaults=defaults) == []
    keep = tuple(field.name for field in dataclasses.fields(base) if field.name not in taken)
    changed = every_field_changed(base, LOADTEST_VALUES, keep=keep)
    assert parsed(to_argv(changed, only=taken, defaults=defaults)) == changed


def test_the_swarms_and_the_checks_own_settings_round_trip() -> None:
    swarm = subcommand(build_parser(), "swarm")
    plan = SwarmPlan()
    changed = every_field_changed(
        plan,
        {"join": "host:5557", "target": "http://h/mcp", "fail_if": ("p95_ms>500", "x.p95_ms<1")},
    )
    argv = to_argv(changed)
    assert SwarmPlan(**values_from_flags(SwarmPlan, swarm.parse_args(argv))) == changed
    verify = subcommand(build_parser(), "verify-plan")
    checked = every_field_changed(Hosting(), {})
    args = verify.parse_args(["plan.json", *to_argv(checked)])
    assert Hosting(**values_from_flags(Hosting, args)) == checked


def test_the_load_tests_commands_take_a_flag_per_field() -> None:
    taken: set[str] = set()
    for name in ("cluster", "scenario", "compare", "swarm"):
        taken |= set(run_settings_of(subcommand(build_parser(), name)))
    declared = {name for name, _ in flags_of(LoadTestConfig).items()}
    assert declared == taken
    verify = subcommand(build_parser(), "verify-plan")
    own = {"--arch", "--duration", "--warmup", "--json"}
    hosting, aim = set(flags_of(Hosting).values()), set(flags_of(TargetSettings).values())
    assert flag_mismatches(Hosting, verify, own | aim) == []
    assert flag_mismatches(TargetSettings, verify, own | hosting) == []


# -- the simulation --------------------------------------------------------------------------


def planned(argv: list[str]) -> PlanRequest:
    return request_from(labsim_parser().parse_args(["plan", *argv]))


def test_the_plans_flags_and_the_requests_fields_are_one_another() -> None:
    own = {"--params", "--set", "--processes", "--json", "--plot"}
    assert flag_mismatches(PlanRequest, subcommand(labsim_parser(), "plan"), own) == []


def test_the_plan_request_round_trips_through_its_command_line() -> None:
    assert to_argv(PlanRequest()) == []
    changed = every_field_changed(
        PlanRequest(),
        {
            "tools": ("get_weather", "crunch"),
            "tool_mix": (0.25, 0.75),
            "round_cpu_ms": 12.5,
            "round_cpu_cv": 0.4,
            "round_cpu_kind": "lognormal",
            "never_answer_share": 0.1,
            "target_cpu_utilization": 0.5,
            "slo_completed_share": 0.99,
            "max_replications": 20,
        },
    )
    assert planned(to_argv(changed)) == changed


def test_the_round_a_user_states_is_one_declaration_for_plan_and_compare() -> None:
    def round_flags(command: str) -> list[tuple[tuple[str, ...], str | None]]:
        parser = subcommand(labsim_parser(), command)
        return [
            (tuple(a.option_strings), a.metavar)
            for a in parser._actions
            if a.dest.startswith("round_cpu")
        ]

    assert round_flags("plan") == round_flags("compare") != []
    # Each command says what it does without them.
    compare = " ".join(subcommand(labsim_parser(), "compare").format_help().split())
    assert "parsing, tool and answer (default: the scenario's)" in compare
    plan = " ".join(subcommand(labsim_parser(), "plan").format_help().split())
    assert "parsing, tool and answer (default: the parameter file's round; the lab's:" in plan


# -- the cluster's replicas ------------------------------------------------------------------

needs_haproxy = pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")


@needs_haproxy
@pytest.mark.parametrize(
    ("arch", "scenario", "tools"),
    [
        ("mrtr", "overload", {"crunch": 1.0}),
        ("sticky", "idle-timeout", {"get_weather": 1.0}),
        ("sse-store", "steady", {"get_weather": 1.0, "echo": 1.0}),
    ],
)
def test_a_replicas_command_line_gives_the_replica_the_cluster_configured(
    arch: str, scenario: str, tools: dict[str, float]
) -> None:
    config = LoadTestConfig(
        arch=arch,
        scenario=scenario,
        tool_mix=tools,
        think_time_median_s=2.0,
        max_connections=64,
        cpu_workers=3,
        cpu_inline_max_ms=0.0,
    )
    cluster = Cluster(config)
    cluster.redis = RedisServer(data_dir=cluster.workdir / "redis")
    keys = cluster.keys.before_rotation()
    wanted = cluster.replica_config("r1", 2, keys)
    argv = cluster.replica_argv(wanted)
    assert argv == to_argv(wanted, skip=("replica_id",))
    given = served(["--replica-id", "r1", *argv])
    assert given == dataclasses.replace(
        wanted, state_keys=parse_state_keys(state_keys_env(KEY_A)), jwt_secret=JWT_SECRET
    )
    assert (given.answer_timeout_s, given.max_connections) == (config.answer_timeout_s, 64)


# -- the machinery ---------------------------------------------------------------------------


def _mix_text(tools: tuple[str, ...], weights: tuple[float, ...]) -> str:
    return ",".join(f"{tool}={weight:g}" for tool, weight in zip(tools, weights, strict=True))


def _mix(text: str) -> dict[str, tuple[Any, ...]]:
    pairs = dict(item.split("=") for item in text.split(","))
    return {"tools": tuple(pairs), "weights": tuple(float(w) for w in pairs.values())}


@dataclasses.dataclass(frozen=True)
class Outing:
    """A small configuration with a field of every kind `to_argv` writes."""

    hours: float = setting(2.5, help="how long", aliases=("--duration",))
    people: int = setting(3, help="how many")
    seed: int | None = setting(None, help="seed; none: a new one")
    by_train: bool = setting(False, help="take the train")
    lunch: bool = setting(True, help="stop for lunch")
    stops: tuple[str, ...] = setting((), help="a stop; repeatable", flag="--stop")
    tools: tuple[str, ...] = setting(
        ("walk",), help="how to move", flag="--mix", parse=_mix, format=_mix_text
    )
    weights: tuple[float, ...] = setting(
        (1.0,), help="how much", flag="--mix", parse=_mix, format=_mix_text
    )
    offset: float = setting(0.0, help="may be negative")


def outing_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_flags(parser, Outing)
    return parser


def outing(argv: list[str]) -> Outing:
    return Outing(**values_from_flags(Outing, outing_parser().parse_args(argv)))


def test_to_argv_writes_each_changed_field_as_its_flag_reads_it() -> None:
    changed = Outing(
        hours=0.1,
        people=4,
        seed=7,
        by_train=True,
        lunch=False,
        stops=("a", "b"),
        tools=("bus", "walk"),
        weights=(2.0, 0.5),
        offset=-1.5,
    )
    assert to_argv(changed) == [
        "--hours", "0.1", "--people", "4", "--seed", "7", "--by-train", "--no-lunch",
        "--stop", "a", "--stop", "b", "--mix", "bus=2,walk=0.5", "--offset=-1.5",
    ]  # fmt: skip
    assert outing(to_argv(changed)) == changed
    assert to_argv(Outing()) == [] and outing([]) == Outing()
    assert outing(["--duration", "4"]).hours == 4.0
    assert "--duration" not in outing_parser().format_help()


def test_what_no_flag_can_state_is_refused() -> None:
    with pytest.raises(ValueError, match="None"):
        to_argv(dataclasses.replace(Outing(seed=3), seed=None), defaults={"seed": 3})


def _careless_text(tools: tuple[str, ...], weights: tuple[float, ...]) -> str:
    return ",".join(f"{tool}=1" for tool in tools)


@dataclasses.dataclass(frozen=True)
class Careless:
    """A mix whose text leaves its weights out."""

    tools: tuple[str, ...] = setting(
        ("walk",), help="how to move", flag="--mix", parse=_mix, format=_careless_text
    )
    weights: tuple[float, ...] = setting(
        (1.0,), help="how much", flag="--mix", parse=_mix, format=_careless_text
    )


def test_a_flag_whose_text_does_not_read_back_is_caught() -> None:
    """The round trip can fail: a mix written without its weights reads back otherwise."""
    changed = Careless(tools=("bus",), weights=(2.0,))
    parser = argparse.ArgumentParser()
    add_flags(parser, Careless)
    back = Careless(**values_from_flags(Careless, parser.parse_args(to_argv(changed))))
    assert back != changed


def test_older_flag_names_still_set_their_fields() -> None:
    loadtest = build_parser().parse_args(
        [
            "scenario",
            "steady",
            "--think-time",
            "2",
            "--think-sigma",
            "0.3",
            "--answer-timeout",
            "5",
        ]
    )
    config = config_from(loadtest)
    assert (config.think_time_median_s, config.think_time_sigma) == (2.0, 0.3)
    assert config.answer_timeout_s == 5.0
    request = planned(["--think-median-s", "30", "--think-sigma", "1"])
    assert (request.think_time_median_s, request.think_time_sigma) == (30.0, 1.0)


def test_where_a_replica_listens_round_trips_and_its_flags_are_its_fields() -> None:
    own = set(flags_of(ServerConfig).values())
    assert flag_mismatches(Listener, serve_parser(), own) == []
    changed = every_field_changed(Listener(), {"host": "::1", "log_level": "info"})
    back = serve_parser().parse_args(to_argv(changed))
    assert Listener(**values_from_flags(Listener, back)) == changed


def test_the_swarms_options_are_its_fields() -> None:
    swarm = subcommand(build_parser(), "swarm")
    own = {*flags_of(LoadTestConfig).values(), "--json"}
    assert flag_mismatches(SwarmPlan, swarm, own) == []


@dataclasses.dataclass(frozen=True)
class HostingWithMore(Hosting):
    """The check's hosting with one more setting, which no command offers."""

    extra_s: float = setting(1.0, help="a setting nobody added to a command")


def test_a_field_without_a_flag_and_a_flag_without_a_field_are_caught() -> None:
    verify = subcommand(build_parser(), "verify-plan")
    own = {"--arch", "--duration", "--warmup", "--json", *flags_of(TargetSettings).values()}
    assert flag_mismatches(HostingWithMore, verify, own) == ["field extra_s: no --extra-s"]
    verify.add_argument("--loose", help="set by hand")
    assert flag_mismatches(Hosting, verify, own) == ["flag --loose: no field"]


def test_the_load_tests_tools_and_the_plans_tool_mix_read_one_syntax() -> None:
    text = "get_weather=0.25, crunch =0.75"
    live = tool_mix_of(text)
    planned_mix = parse_tool_mix(text)
    assert list(live) == list(planned_mix["tools"]) == ["get_weather", "crunch"]
    assert tuple(live.values()) == planned_mix["tool_mix"] == (0.25, 0.75)

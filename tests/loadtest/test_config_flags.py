"""One statement per setting: each flag of the load test's commands is generated from the
`LoadTestConfig` field it sets, or is the command's own option; every field has a flag or
says why not; every option has help and shows its default."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

from loadtest.__main__ import build_parser
from loadtest.cli.options import COMMAND_OPTIONS, RUN_SETTINGS
from loadtest.cli.runs import config_from
from loadtest.config import LoadTestConfig
from server.flags import flags_of, setting, setting_of


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (subcommands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subcommands.choices)


def grouped(command: argparse.ArgumentParser, title: str) -> list[argparse.Action]:
    return [a for g in command._action_groups if g.title == title for a in g._group_actions]


def options(command: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in command._actions if not isinstance(a, argparse._HelpAction)]


def fields_without_a_flag(config_type: type, parser: argparse.ArgumentParser) -> list[str]:
    """Fields with a flag that no command takes, and fields without one that say not why."""
    taken = {a.dest for c in commands(parser).values() for a in grouped(c, RUN_SETTINGS)}
    missing = []
    for field in dataclasses.fields(config_type):
        described = setting_of(field)
        if (field.name not in taken) if described.cli else ("no flag" not in described.help):
            missing.append(field.name)
    return missing


def flags_without_a_field(config_type: type, parser: argparse.ArgumentParser) -> list[str]:
    """Run settings that are not their field's flag, with its help and choices; options
    that are neither a run setting nor the command's own; own options that set a field."""
    fields = {field.name: field for field in dataclasses.fields(config_type)}
    flags = flags_of(config_type)
    wrong = []
    for name, command in commands(parser).items():
        settings, own = grouped(command, RUN_SETTINGS), grouped(command, COMMAND_OPTIONS)
        for action in settings:
            field = fields.get(action.dest)
            described = setting_of(field) if field is not None else None
            if action.help == argparse.SUPPRESS and described is not None:
                # An older name of the field's flag, still accepted: one the field declares.
                if action.option_strings[0] not in described.aliases:
                    wrong.append(f"{name} {action.option_strings}")
                continue
            if (
                described is None
                or not described.cli
                # The scenario command takes its scenario as a positional argument.
                or action.option_strings not in ([flags[action.dest]], [])
                or not (action.help or "").startswith(described.help.replace("%", "%%"))
                or (tuple(action.choices) if action.choices else None) != described.choices
            ):
                wrong.append(f"{name} {action.option_strings or action.dest}")
        placed = {id(action) for action in settings + own}
        wrong += [f"{name} {a.option_strings}" for a in options(command) if id(a) not in placed]
        if settings:
            wrong += [f"{name} {a.option_strings}" for a in own if a.dest in fields]
    return wrong


def test_every_field_has_a_flag_or_says_why_not() -> None:
    assert fields_without_a_flag(LoadTestConfig, build_parser()) == []


def test_every_flag_sets_its_field_or_is_the_commands_own() -> None:
    assert flags_without_a_field(LoadTestConfig, build_parser()) == []


@pytest.mark.parametrize("command", sorted(commands(build_parser())))
def test_every_option_has_help_and_shows_its_default(command: str) -> None:
    parser = commands(build_parser())[command]
    for action in options(parser):
        if action.help == argparse.SUPPRESS:
            continue  # an older name of a flag, accepted and not shown
        assert action.help, f"{command} {action.option_strings or action.dest} has no help"
        # A switch is off unless given; None is a default the help says in words.
        if action.default is not None and action.nargs != 0:
            assert "(default" in action.help, f"{command} {action.option_strings}"


def test_every_command_has_help_and_its_help_page_renders() -> None:
    parser = build_parser()
    (subcommands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    described = {action.dest: action.help for action in subcommands._choices_actions}
    assert set(described) == set(commands(parser))
    assert all(described.values()), described
    for name, command in commands(parser).items():
        page = command.format_help()  # a stray % in a help text breaks this
        flags = [
            a.option_strings[-1]
            for a in options(command)
            if a.option_strings and a.help != argparse.SUPPRESS
        ]
        assert all(flag in page for flag in flags), name


@dataclasses.dataclass
class WithAFieldNoCommandTakes(LoadTestConfig):
    """The lab's configuration with one more setting, which no command offers."""

    extra_s: float = setting(1.0, help="a setting nobody added to a command")


def test_a_field_no_command_offers_is_caught() -> None:
    assert fields_without_a_flag(WithAFieldNoCommandTakes, build_parser()) == ["extra_s"]


def test_a_flag_declared_by_hand_is_caught() -> None:
    parser = build_parser()
    scenario = commands(parser)["scenario"]
    (settings,) = [g for g in scenario._action_groups if g.title == RUN_SETTINGS]
    settings.add_argument("--spawn", dest="spawn_rate", type=float, help="users a second")
    scenario.add_argument("--loose", help="in no group")
    assert flags_without_a_field(LoadTestConfig, parser) == [
        "scenario ['--spawn']",
        "scenario ['--loose']",
    ]


def parse(*argv: str) -> Any:
    return build_parser().parse_args(list(argv))


def test_flags_left_out_leave_the_fields_defaults() -> None:
    assert config_from(parse("scenario", "steady")) == LoadTestConfig()
    assert config_from(parse("compare")) == LoadTestConfig(scenario="rolling-upgrade")
    assert config_from(parse("swarm")) == LoadTestConfig()
    assert config_from(parse("cluster", "up")) == LoadTestConfig()


def test_flags_set_their_fields() -> None:
    config = config_from(
        parse(
            "scenario", "crash", "--arch", "sticky", "--users", "7", "--duration", "12.5",
            "--think-time-median-s", "2", "--tools", "echo=2,crunch", "--seed", "9",
            "--task-store-fsync", "off", "--lb-idle-timeout", "0.5",
        )
    )  # fmt: skip
    assert config == LoadTestConfig(
        arch="sticky",
        scenario="crash",
        users=7,
        duration_s=12.5,
        think_time_median_s=2.0,
        tool_mix={"echo": 2.0, "crunch": 1.0},
        seed=9,
        task_store_fsync="off",
        lb_idle_timeout_s=0.5,
    )


def test_a_swarm_starts_its_users_at_once_only_when_they_are_given() -> None:
    assert parse("swarm").users is None
    assert parse("swarm", "--users", "20").users == 20
    assert config_from(parse("swarm")).users == LoadTestConfig().users

"""A configuration dataclass's command line, generated from its fields (`server.flags`)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

from server.flags import add_flags, flags_of, setting, values_from_flags


def _parse_mix(text: str) -> dict[str, float]:
    pairs = (item.split("=") for item in text.split(","))
    return {name: float(weight) for name, weight in pairs}


def _parse_ports(text: str) -> tuple[int, ...]:
    return tuple(int(port) for port in text.split(","))


@dataclass(frozen=True)
class Trip:
    """A small configuration with one field of every kind the module reads."""

    duration_s: float = setting(2.5, help="how long the trip lasts", metavar="S")
    travellers: int = setting(3, help="people on the trip", metavar="N")
    city: str = setting("Lisbon", help="where it goes", choices=("Lisbon", "Porto"))
    by_train: bool = setting(False, help="take the train")
    with_luggage: bool = setting(True, help="carry luggage")
    stops: tuple[str, ...] = setting((), help="a stop on the way; repeatable", flag="--stop")
    ports: tuple[int, ...] = setting((80,), help="ports, comma-separated", parse=_parse_ports)
    seed: int | None = setting(None, help="seed of the route; none: a new route each time")
    mix: dict[str, float] = setting(
        default_factory=lambda: {"walk": 1.0},
        help="how to move, e.g. walk=1,bus=2",
        parse=_parse_mix,
    )
    discount: float = setting(0.1, help="a 10% discount", flag="--rebate")
    ticket: str = setting("", help="read from the environment, never typed", cli=False)


def _parser(**options: Any) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trip")
    add_flags(parser, Trip, **options)
    return parser


def _trip(argv: list[str], **options: Any) -> Trip:
    return Trip(**values_from_flags(Trip, _parser(**options).parse_args(argv)))


def _help(**options: Any) -> str:
    return " ".join(_parser(**options).format_help().split())


def test_every_flag_is_named_for_its_field_unless_the_field_names_another() -> None:
    assert flags_of(Trip) == {
        "duration_s": "--duration-s",
        "travellers": "--travellers",
        "city": "--city",
        "by_train": "--by-train",
        "with_luggage": "--no-with-luggage",
        "stops": "--stop",
        "ports": "--ports",
        "seed": "--seed",
        "mix": "--mix",
        "discount": "--rebate",
    }


def test_no_flags_give_the_dataclass_defaults() -> None:
    assert _trip([]) == Trip()


def test_each_flag_sets_its_field_with_the_fields_type() -> None:
    trip = _trip(
        [
            "--duration-s=4",
            "--travellers=5",
            "--city=Porto",
            "--by-train",
            "--no-with-luggage",
            "--stop=Coimbra",
            "--stop=Aveiro",
            "--ports=8000,8001",
            "--seed=7",
            "--mix=walk=1,bus=2.5",
            "--rebate=0.2",
        ]
    )
    assert trip == Trip(
        duration_s=4.0,
        travellers=5,
        city="Porto",
        by_train=True,
        with_luggage=False,
        stops=("Coimbra", "Aveiro"),
        ports=(8000, 8001),
        seed=7,
        mix={"walk": 1.0, "bus": 2.5},
        discount=0.2,
    )
    assert isinstance(trip.duration_s, float) and isinstance(trip.travellers, int)


def test_a_value_outside_the_choices_or_of_the_wrong_type_is_refused() -> None:
    for argv in (["--city=Faro"], ["--travellers=many"], ["--ports=a,b"]):
        with pytest.raises(SystemExit):
            _parser().parse_args(argv)


def test_help_shows_every_settings_help_and_default() -> None:
    text = _help()
    assert "--duration-s S how long the trip lasts (default: 2.5)" in text
    assert "--travellers N people on the trip (default: 3)" in text
    assert "where it goes (default: Lisbon)" in text
    assert "--by-train take the train (default: off)" in text
    assert "--no-with-luggage carry luggage (default: off)" in text
    assert "a stop on the way; repeatable (default: none)" in text
    assert "ports, comma-separated (default: 80)" in text
    assert "a new route each time (default: none)" in text
    assert "e.g. walk=1,bus=2 (default: walk=1.0)" in text
    assert "a 10% discount (default: 0.1)" in text


def test_a_field_without_a_flag_is_not_on_the_command_line() -> None:
    assert "--ticket" not in _help()
    with pytest.raises(SystemExit):
        _parser().parse_args(["--ticket=x"])


def test_only_and_skip_choose_the_flags_and_the_rest_keep_their_defaults() -> None:
    parser = _parser(only=("travellers", "city"), skip=("city",))
    assert [action.dest for action in parser._actions if action.dest != "help"] == ["travellers"]
    assert values_from_flags(Trip, parser.parse_args(["--travellers=9"])) == {"travellers": 9}


def test_a_commands_default_replaces_the_fields() -> None:
    assert _trip([], defaults={"travellers": 8}).travellers == 8
    assert "people on the trip (default: 8)" in _help(defaults={"travellers": 8})


def test_a_default_replaced_by_none_leaves_the_field_to_the_command() -> None:
    parser = _parser(defaults={"city": None})
    assert "city" not in values_from_flags(Trip, parser.parse_args([]))
    assert values_from_flags(Trip, parser.parse_args(["--city=Porto"]))["city"] == "Porto"
    (city,) = [action for action in parser._actions if action.dest == "city"]
    assert city.help == "where it goes"


def test_flags_join_an_argument_group() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser.add_argument_group("trip"), Trip, only=("seed",))
    assert values_from_flags(Trip, parser.parse_args(["--seed=3"])) == {"seed": 3}


def test_names_the_dataclass_does_not_have_are_refused() -> None:
    with pytest.raises(ValueError, match="no flag"):
        _parser(skip=("travelers",))
    with pytest.raises(ValueError, match="no flag"):
        _parser(only=("ticket",))
    with pytest.raises(ValueError, match="defaults"):
        _parser(defaults={"nowhere": 1})


def test_a_field_declared_without_setting_is_refused() -> None:
    @dataclass
    class Loose:
        plain: int = 1

    with pytest.raises(TypeError, match="plain"):
        add_flags(argparse.ArgumentParser(), Loose)
    with pytest.raises(TypeError, match="plain"):
        flags_of(Loose)


def test_a_setting_needs_help_and_a_real_flag() -> None:
    with pytest.raises(ValueError, match="help"):
        setting(1, help=" ")
    with pytest.raises(ValueError, match="--"):
        setting(1, help="a count", flag="count")


def test_a_type_the_module_cannot_read_needs_parse() -> None:
    @dataclass
    class Weights:
        weights: dict[str, float] = setting(default_factory=dict, help="weights")

    with pytest.raises(TypeError, match="parse"):
        add_flags(argparse.ArgumentParser(), Weights)


def test_a_field_without_a_default_makes_its_flag_required() -> None:
    @dataclass
    class Target:
        url: str = setting(help="where to send the load")

    parser = argparse.ArgumentParser()
    add_flags(parser, Target)
    with pytest.raises(SystemExit):
        parser.parse_args([])
    assert Target(**values_from_flags(Target, parser.parse_args(["--url=x"]))).url == "x"


def test_setting_keeps_a_default_factory_and_the_field_metadata() -> None:
    field = {field.name: field for field in dataclasses.fields(Trip)}["mix"]
    assert Trip().mix == {"walk": 1.0} and Trip().mix is not Trip().mix
    assert field.metadata["server.flags"].parse is _parse_mix

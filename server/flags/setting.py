"""A setting: a configuration field that carries its flag, help and default, and what
each field of a configuration dataclass says about its flag."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

#: Where a field's `Setting` is kept in `dataclasses.Field.metadata`.
METADATA_KEY = "server.flags"


@dataclasses.dataclass(frozen=True)
class Setting:
    """What a configuration field says about its command-line flag."""

    #: What the setting does, shown by `--help` (and, with `cli=False`, why it has no flag).
    help: str
    #: The flag, when it is not `--field-name`.
    flag: str | None = None
    #: The name of the value in `--help` (`S`, `N`, `URL`).
    metavar: str | None = None
    #: The values allowed, when only a few are.
    choices: tuple[object, ...] | None = None
    #: Turns the flag's text into the field's value, when the field's type alone cannot.
    parse: Callable[[str], object] | None = None
    #: Writes the field's value as its flag's text (for `to_argv`), when `str` would not
    #: read back; a flag of several fields takes their values in the order they are declared.
    format: Callable[..., str] | None = None
    #: Older names of the flag, still accepted and not shown in `--help`.
    aliases: tuple[str, ...] = ()
    #: Whether the field has a flag at all.
    cli: bool = True


def setting(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    flag: str | None = None,
    metavar: str | None = None,
    choices: Sequence[object] | None = None,
    parse: Callable[[str], object] | None = None,
    format: Callable[..., str] | None = None,
    aliases: Sequence[str] = (),
    default_factory: Any = dataclasses.MISSING,
    cli: bool = True,
) -> Any:
    """A dataclass field that carries its command-line flag, help and choices.

    The flag is `--field-name` unless `flag` says otherwise; `aliases` are older names still
    accepted; `cli=False` marks a field that has no flag on purpose (say why in its help).
    """
    if not help.strip():
        raise ValueError("a setting needs help text")
    for name in (flag, *aliases):
        if name is not None and not name.startswith("--"):
            raise ValueError(f"flag {name!r} must start with --")
    described = Setting(
        help=help.strip(),
        flag=flag,
        metavar=metavar,
        choices=None if choices is None else tuple(choices),
        parse=parse,
        format=format,
        aliases=tuple(aliases),
        cli=cli,
    )
    return dataclasses.field(
        default=default,
        default_factory=default_factory,
        metadata={METADATA_KEY: described},
    )


def setting_of(field: dataclasses.Field[Any]) -> Setting:
    """The `Setting` a field was declared with; a field declared otherwise is an error."""
    described = field.metadata.get(METADATA_KEY)
    if not isinstance(described, Setting):
        raise TypeError(f"field {field.name!r} is not declared with setting(...)")
    return described


def flags_of(config_type: type) -> dict[str, str]:
    """Field name -> flag, for every field that has one (for tests that compare a parser)."""
    return {
        field.name: field_flag(field, setting_of(field), field_default(field))
        for field in dataclasses.fields(config_type)
        if setting_of(field).cli
    }


def flag_fields(config_type: type) -> dict[str, list[dataclasses.Field[Any]]]:
    """Each flag of `config_type` and the fields it sets (one, or several set together)."""
    flags: dict[str, list[dataclasses.Field[Any]]] = {}
    for field in dataclasses.fields(config_type):
        described = setting_of(field)
        if described.cli:
            flags.setdefault(field_flag(field, described, field_default(field)), []).append(field)
    return flags


def dest_of(flag: str) -> str:
    """Where argparse keeps a flag's value when it sets several fields."""
    return flag.removeprefix("--").replace("-", "_")


def chosen_fields(
    config_type: type, only: Iterable[str] | None, skip: Iterable[str]
) -> list[dataclasses.Field[Any]]:
    if not dataclasses.is_dataclass(config_type):
        raise TypeError(f"{config_type!r} is not a dataclass")
    with_flags = {
        field.name: field for field in dataclasses.fields(config_type) if setting_of(field).cli
    }
    wanted = set(with_flags) if only is None else set(only)
    skipped = set(skip)
    unknown = (wanted | skipped) - set(with_flags)
    if unknown:
        raise ValueError(f"{config_type.__name__} has no flag for {sorted(unknown)}")
    return [field for name, field in with_flags.items() if name in wanted - skipped]


def field_default(field: dataclasses.Field[Any]) -> object:
    """The field's default; None when it has none or computes it (the dataclass will)."""
    if field.default is not dataclasses.MISSING:
        return field.default
    return None


def computed_default(field: dataclasses.Field[Any]) -> object:
    """What the field starts as when its flag is not given (shown by `--help`)."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def field_flag(field: dataclasses.Field[Any], described: Setting, default: object) -> str:
    if described.flag is not None:
        return described.flag
    name = field.name.replace("_", "-")
    # A switch that is on by default is turned off; "--x" would do nothing.
    return f"--no-{name}" if default is True else f"--{name}"

"""The command line of a configuration dataclass: each setting's flag, help, default and type
stated once, on the field.

A configuration dataclass declares its fields with `setting(...)`; a command then adds one
flag per field with `add_flags` and reads the parsed flags back with `values_from_flags`:

    @dataclass(frozen=True)
    class Config:
        max_rounds: int = setting(16, help="input rounds one request may take", metavar="N")

    parser = argparse.ArgumentParser()
    add_flags(parser, Config)
    config = Config(**values_from_flags(Config, parser.parse_args()))

The flag is `--field-name` unless the field names another (a flag users already know). A
`bool` field is a switch (`--x` when it is off by default, `--no-x` when it is on); an
`int`, `float` or `str` field takes one value of that type; a `tuple` of such values takes
one value per use of a repeatable flag, unless the field gives `parse`, which turns one
value into the whole setting (as it must for any other type). Standard library only, so
every package of the project can describe its own configuration with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

#: Where a field's `Setting` is kept in `dataclasses.Field.metadata`.
METADATA_KEY = "server.flags"
#: The types a flag's value converts to without a `parse` of its own.
_SCALARS: tuple[type, ...] = (int, float, str)


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
    #: Whether the field has a flag at all.
    cli: bool = True


class ArgumentContainer(Protocol):
    """An argument parser or one of its argument groups: what `add_flags` adds flags to."""

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action: ...


def setting(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    flag: str | None = None,
    metavar: str | None = None,
    choices: Sequence[object] | None = None,
    parse: Callable[[str], object] | None = None,
    default_factory: Any = dataclasses.MISSING,
    cli: bool = True,
) -> Any:
    """A dataclass field that carries its command-line flag, help and choices.

    The flag is `--field-name` unless `flag` says otherwise; `cli=False` marks a field that
    has no flag on purpose (say why in its help).
    """
    if not help.strip():
        raise ValueError("a setting needs help text")
    if flag is not None and not flag.startswith("--"):
        raise ValueError(f"flag {flag!r} must start with --")
    described = Setting(
        help=help.strip(),
        flag=flag,
        metavar=metavar,
        choices=None if choices is None else tuple(choices),
        parse=parse,
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


def add_flags(
    parser: ArgumentContainer,
    config_type: type,
    *,
    only: Iterable[str] | None = None,
    skip: Iterable[str] = (),
    defaults: Mapping[str, object] | None = None,
) -> None:
    """Add one flag per field of `config_type`, with help that shows the default.

    `only` and `skip` choose fields by name; `defaults` replaces a field's default for this
    command. A default replaced by None leaves the field unset unless the flag is given (the
    command fills it in), and the field's help must then say what happens.
    """
    defaults = dict(defaults or {})
    chosen = _chosen_fields(config_type, only, skip)
    unknown = set(defaults) - {field.name for field in chosen}
    if unknown:
        raise ValueError(f"defaults for fields without a flag here: {sorted(unknown)}")
    hints = typing.get_type_hints(config_type)
    for field in chosen:
        described = setting_of(field)
        if field.name in defaults:
            default = defaults[field.name]
            overridden = True
        else:
            default = _field_default(field)
            overridden = False
        flag, options = _argument(field, described, hints[field.name], default, overridden)
        parser.add_argument(flag, dest=field.name, **options)


def values_from_flags(config_type: type, namespace: argparse.Namespace) -> dict[str, Any]:
    """The field values the parsed flags set, keyed by field name (for `replace` or the ctor).

    A field whose flag is not on this parser, or was left unset (None), is left out, so the
    dataclass's own default (or the caller's value) applies.
    """
    values: dict[str, Any] = {}
    for field in dataclasses.fields(config_type):
        if not setting_of(field).cli or not hasattr(namespace, field.name):
            continue
        value = getattr(namespace, field.name)
        if value is None:
            continue
        values[field.name] = tuple(value) if isinstance(value, list) else value
    return values


def flags_of(config_type: type) -> dict[str, str]:
    """Field name -> flag, for every field that has one (for tests that compare a parser)."""
    return {
        field.name: _flag(field, setting_of(field), _field_default(field))
        for field in dataclasses.fields(config_type)
        if setting_of(field).cli
    }


def _chosen_fields(
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


def _field_default(field: dataclasses.Field[Any]) -> object:
    """The field's default; None when it has none or computes it (the dataclass will)."""
    if field.default is not dataclasses.MISSING:
        return field.default
    return None


def _flag(field: dataclasses.Field[Any], described: Setting, default: object) -> str:
    if described.flag is not None:
        return described.flag
    name = field.name.replace("_", "-")
    # A switch that is on by default is turned off; "--x" would do nothing.
    return f"--no-{name}" if default is True else f"--{name}"


def _argument(
    field: dataclasses.Field[Any],
    described: Setting,
    hint: object,
    default: object,
    overridden: bool,
) -> tuple[str, dict[str, Any]]:
    """The flag and the keywords of `add_argument` for one field."""
    value_type, _ = _unwrap_optional(hint)
    flag = _flag(field, described, _field_default(field))
    if value_type is bool and described.parse is None:
        if overridden:
            raise ValueError(f"{field.name}: a switch keeps the field's default")
        switch_off = "store_false" if default is True else "store_true"
        return flag, {
            "action": switch_off,
            "default": bool(default),
            "help": _help(described.help, "off"),
        }
    options: dict[str, Any] = {"default": default}
    if described.parse is not None:
        options["type"] = described.parse
    elif value_type in _SCALARS:
        options["type"] = value_type
    elif _repeatable_item(value_type) is not None:
        if overridden:
            raise ValueError(f"{field.name}: a repeatable flag keeps the field's default")
        options["action"] = "append"
        options["type"] = _repeatable_item(value_type)
        # argparse appends to a list default in place; None leaves the field's own default.
        options["default"] = None
    else:
        raise TypeError(
            f"{field.name}: a {value_type!r} setting needs parse= to read it from its flag"
        )
    if described.choices is not None:
        options["choices"] = described.choices
    if described.metavar is not None:
        options["metavar"] = described.metavar
    if overridden:
        # None: the command fills the field in when the flag is not given; its help says how.
        options["help"] = _help(described.help, None if default is None else _shown(default))
    elif _has_default(field):
        options["help"] = _help(described.help, _shown(_computed_default(field)))
    else:
        options["required"] = True
        options["help"] = _help(described.help, None)
    return flag, options


def _unwrap_optional(hint: object) -> tuple[object, bool]:
    """`X | None` -> (X, True); any other type -> (it, False)."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        members = [member for member in typing.get_args(hint) if member is not type(None)]
        if len(members) == 1:
            return members[0], True
    return hint, False


def _repeatable_item(tuple_type: object) -> type | None:
    """The item type of `tuple[X, ...]` when X is a plain scalar, else None."""
    arguments = typing.get_args(tuple_type)
    if len(arguments) == 2 and arguments[1] is Ellipsis and arguments[0] in _SCALARS:
        item: type = arguments[0]
        return item
    return None


def _has_default(field: dataclasses.Field[Any]) -> bool:
    return (
        field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
    )


def _computed_default(field: dataclasses.Field[Any]) -> object:
    """What the field starts as when its flag is not given (shown by `--help`)."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def _help(text: str, default: str | None) -> str:
    """The help text as argparse wants it, with the default after it."""
    shown = text if default is None else f"{text} (default: {default})"
    # argparse formats help with %; a literal % must not be read as a format field.
    return shown.replace("%", "%%")


def _shown(value: object) -> str:
    """A default as a user would type it."""
    if value is None:
        return "none"
    if isinstance(value, tuple | list):
        return ",".join(_shown(item) for item in value) if value else "none"
    if isinstance(value, dict):
        return ",".join(f"{key}={_shown(item)}" for key, item in value.items()) or "none"
    return str(value)

"""A configuration dataclass's flags on an argument parser, and its fields read back from
the parsed flags."""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from server.flags.setting import (
    Setting,
    chosen_fields,
    computed_default,
    dest_of,
    field_default,
    field_flag,
    flag_fields,
    setting_of,
)

#: The types a flag's value converts to without a `parse` of its own.
_SCALARS: tuple[type, ...] = (int, float, str)


class ArgumentContainer(Protocol):
    """An argument parser or one of its argument groups: what `add_flags` adds flags to."""

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action: ...


def add_flags(
    parser: ArgumentContainer,
    config_type: type,
    *,
    only: Iterable[str] | None = None,
    skip: Iterable[str] = (),
    defaults: Mapping[str, object] | None = None,
    action: type[argparse.Action] | None = None,
    shown: Mapping[str, str] | None = None,
) -> None:
    """Add one flag per field of `config_type`, with help that shows the default.

    `only` and `skip` choose fields by name; `defaults` replaces a field's default for this
    command. A default replaced by None leaves the field unset unless the flag is given (the
    command fills it in), and the field's help must then say what happens. `shown` says in
    words what this command does when a field's flag is not given, where its value would
    not (a field left at None that the command fills in). `action`, when given, stores
    every flag that takes a value (a command that notes which were given).
    """
    defaults = dict(defaults or {})
    shown = dict(shown or {})
    chosen = chosen_fields(config_type, only, skip)
    unknown = (set(defaults) | set(shown)) - {field.name for field in chosen}
    if unknown:
        raise ValueError(f"defaults for fields without a flag here: {sorted(unknown)}")
    hints = typing.get_type_hints(config_type)
    for flag, members in flag_fields(config_type).items():
        if len(members) > 1 and any(field in chosen for field in members):
            if not all(field in chosen for field in members):
                raise ValueError(f"{flag} sets {[f.name for f in members]}: choose all or none")
            if defaults.keys() & {field.name for field in members}:
                raise ValueError(f"{flag} sets several fields and keeps their defaults")
    done: set[str] = set()
    for field in chosen:
        described = setting_of(field)
        if field.name in defaults:
            default = defaults[field.name]
            overridden = True
        else:
            default = field_default(field)
            overridden = False
        members = flag_fields(config_type)[field_flag(field, described, field_default(field))]
        if len(members) > 1:
            flag, dest, options = _shared_argument(members)
        else:
            flag, options = _argument(field, described, hints[field.name], default, overridden)
            dest = field.name
        if flag in done:
            continue
        done.add(flag)
        if action is not None and "action" not in options:
            options["action"] = action
        if field.name in shown:
            options["help"] = _help(described.help, shown[field.name])
        parser.add_argument(flag, dest=dest, **options)
        for alias in described.aliases:
            hidden = {**options, "help": argparse.SUPPRESS, "default": argparse.SUPPRESS}
            hidden.pop("required", None)
            parser.add_argument(alias, dest=dest, **hidden)


def values_from_flags(config_type: type, namespace: argparse.Namespace) -> dict[str, Any]:
    """The field values the parsed flags set, keyed by field name (for `replace` or the ctor).

    A field whose flag is not on this parser, or was left unset (None), is left out, so the
    dataclass's own default (or the caller's value) applies.
    """
    values: dict[str, Any] = {}
    for flag, members in flag_fields(config_type).items():
        if len(members) == 1:
            (field,) = members
            value = getattr(namespace, field.name, None)
            if value is not None:
                values[field.name] = tuple(value) if isinstance(value, list) else value
            continue
        together = getattr(namespace, dest_of(flag), None)
        if together is not None:
            values.update({field.name: together[field.name] for field in members})
    return values


def _shared_argument(
    members: list[dataclasses.Field[Any]],
) -> tuple[str, str, dict[str, Any]]:
    """The flag, its destination and the keywords of `add_argument` for a flag that sets
    several fields: its `parse` returns each one's value by field name."""
    described = setting_of(members[0])
    flag = field_flag(members[0], described, None)
    if described.parse is None or described.format is None:
        raise TypeError(f"{flag} sets several fields and needs parse= and format=")
    defaults = [computed_default(field) for field in members]
    options: dict[str, Any] = {
        "type": described.parse,
        # None: each field keeps its own default unless the flag is given.
        "default": None,
        "help": _help(described.help, described.format(*defaults)),
    }
    if described.metavar is not None:
        options["metavar"] = described.metavar
    return flag, dest_of(flag), options


def _argument(
    field: dataclasses.Field[Any],
    described: Setting,
    hint: object,
    default: object,
    overridden: bool,
) -> tuple[str, dict[str, Any]]:
    """The flag and the keywords of `add_argument` for one field."""
    value_type, _ = _unwrap_optional(hint)
    flag = field_flag(field, described, field_default(field))
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
        options["help"] = _help(described.help, _shown(computed_default(field)))
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


def named_values(text: str) -> dict[str, str]:
    """`NAME=VALUE,...` as each name's text, in order (a bare name has the value ""): the
    syntax of every flag that names several things with a figure each, as a tool mix."""
    found: dict[str, str] = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        found[name.strip()] = value.strip()
    return found

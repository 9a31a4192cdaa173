"""A configuration turned back into the command line that gives it: the way back of
`add_flags`, generated from the same fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from server.flags.setting import (
    Setting,
    chosen_fields,
    computed_default,
    field_default,
    field_flag,
    flag_fields,
    setting_of,
)


def to_argv(
    config: object,
    *,
    only: Iterable[str] | None = None,
    skip: Iterable[str] = (),
    defaults: Mapping[str, object] | None = None,
) -> list[str]:
    """The command line that gives `config`: a flag for each field (of those `only` and
    `skip` choose) whose value is not its default, with the text its flag reads.

    `defaults` are the command's own, as given to `add_flags`. Fields without a flag are
    left out (they come from elsewhere: the environment, the command itself). A value no
    flag can state (None where the default is a value, an empty repeatable flag) is an error.
    """
    config_type = type(config)
    defaults = dict(defaults or {})
    chosen = chosen_fields(config_type, only, skip)
    argv: list[str] = []
    done: set[str] = set()
    for field in chosen:
        described = setting_of(field)
        flag = field_flag(field, described, field_default(field))
        members = flag_fields(config_type)[flag]
        if flag in done:
            continue
        done.add(flag)
        values = [getattr(config, member.name) for member in members]
        if values == [defaults.get(m.name, computed_default(m)) for m in members]:
            continue
        argv += _words(field, described, flag, values)
    return argv


def _words(
    field: dataclasses.Field[Any],
    described: Setting,
    flag: str,
    values: list[object],
) -> list[str]:
    """The words that set a field (or the fields a flag sets together) to `values`."""
    value = values[0]
    if len(values) > 1:
        if described.format is None:
            raise TypeError(f"{flag} sets several fields and needs format= to write them")
        return _pair(flag, described.format(*values))
    if described.format is not None:
        return _pair(flag, described.format(value))
    if isinstance(value, bool) and described.parse is None:
        return [flag]
    if value is None:
        raise ValueError(f"{field.name}: None cannot be stated on the command line")
    if described.parse is None and isinstance(value, tuple):
        if not value:
            raise ValueError(f"{field.name}: an empty {flag} cannot replace its default")
        return [word for item in value for word in _pair(flag, _text(item))]
    return _pair(flag, _text(value))


def _pair(flag: str, text: str) -> list[str]:
    # A value that starts with a dash would be read as a flag of its own.
    return [f"{flag}={text}"] if text.startswith("-") else [flag, text]


def _text(value: object) -> str:
    """A value as its flag reads it back: numbers as short as they stay equal, mappings
    and sequences as `name=value,...` and `a,b`."""
    if isinstance(value, float):
        short = f"{value:g}"
        return short if float(short) == value else repr(value)
    if isinstance(value, dict):
        return ",".join(f"{key}={_text(item)}" for key, item in value.items())
    if isinstance(value, tuple | list):
        return ",".join(_text(item) for item in value)
    return str(value)

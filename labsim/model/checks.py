"""Checks that a parameter lies in its domain, and the error raised when it does not.

Every parameter dataclass of the model checks its fields when it is built, so a
negative rate or an unknown policy fails at once, with its name, rather than as a
strange run later.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard


class ParameterError(ValueError):
    """A parameter outside its domain: a negative rate, no replicas, an unknown name."""


def require(condition: bool, message: str) -> None:
    """Raise `ParameterError(message)` unless `condition` holds."""
    if not condition:
        raise ParameterError(message)


def check_numbers(owner: object, *names: str, positive: bool = False) -> None:
    """Each named field is a number >= 0, or > 0 when `positive`."""
    for name in names:
        value = getattr(owner, name)
        number = isinstance(value, int | float) and not math.isnan(value)
        require(
            number and (value > 0 if positive else value >= 0),
            f"{name} must be a number {'>' if positive else '>='} 0, got {value!r}",
        )


def check_fraction(owner: object, *names: str) -> None:
    """Each named field is a number between 0 and 1."""
    for name in names:
        value = getattr(owner, name)
        require(
            isinstance(value, int | float) and 0 <= value <= 1,
            f"{name} must be between 0 and 1, got {value!r}",
        )


def number_or_text(text: str) -> Any:
    """A value as written on a command line: an int, else a float, else the text itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def is_number(value: Any, positive: bool = False) -> TypeGuard[int | float]:
    """Whether a value read from a file is a finite number >= 0 (> 0 with `positive`),
    and not a boolean (which JSON and Python would otherwise take for 0 or 1)."""
    return (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and math.isfinite(value)
        and value >= 0
        and not (positive and value == 0)
    )

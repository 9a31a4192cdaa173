"""The examples in labsim's docstrings run and print what they claim."""

from __future__ import annotations

import doctest

import labsim


def test_the_package_example_runs() -> None:
    outcome = doctest.testmod(labsim, verbose=False)
    assert outcome.attempted > 0
    assert outcome.failed == 0

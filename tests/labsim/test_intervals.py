"""Intervals kept to what a metric can take: a count's never below zero, a share's never
above one, in the printed table as in the figures."""

from __future__ import annotations

import math

import pytest

from labsim.cli.compare import _format
from labsim.model.metrics import bounds, clipped_interval


def test_a_count_interval_stops_at_zero() -> None:
    assert clipped_interval(0.2, 0.555) == (0.0, pytest.approx(0.755))
    assert bounds("lost") == (0.0, math.inf)


def test_a_share_interval_stops_at_one() -> None:
    assert bounds("completed_share") == (0.0, 1.0)
    assert clipped_interval(0.99, 0.05, *bounds("completed_share")) == (pytest.approx(0.94), 1.0)


def test_the_printed_table_shows_a_clipped_interval_as_its_ends() -> None:
    assert _format(0.2, 0.555, 0.0, math.inf) == "0.200 (0.000 to 0.755)"
    assert _format(5.0, 1.0, 0.0, math.inf) == "5.00 ± 1.00"

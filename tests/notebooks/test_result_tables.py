"""The notebooks' tables: counts stay whole, headings carry units, architectures keep the
figures' order, and no bare `pd.Series` printout is needed for a few named quantities."""

from __future__ import annotations

import pandas as pd
import pytest

from lessons import result_tables as tables


def tidy(by: str | None = None) -> pd.DataFrame:
    """Rows as `labsim.study.compare` and `.sweep` return them, mrtr first on purpose."""
    return pd.DataFrame(
        [
            {
                **({by: rate} if by else {}),
                "architecture": architecture,
                "metric": metric,
                "mean": mean * rate,
                "ci_half_width": 0.5,
            }
            for rate in ((4, 1) if by else (1,))
            for architecture in ("mrtr", "sticky", "sse-store")
            for metric, mean in (("failed", 3.0), ("p95_latency_s", 0.2125))
        ]
    )


def test_readable_names_rows_and_columns_with_units_and_keeps_counts_whole() -> None:
    table = tables.readable(tidy(), ["p95_latency_s", "failed"])
    assert list(table.columns) == ["p95 latency (ms)", "failed"]
    assert list(table.index) == ["SSE + shared store", "sticky load balancer", "MRTR"]
    assert table.index.name == "architecture"
    assert str(table["failed"].dtype) == "Int64"
    assert table["p95 latency (ms)"].tolist() == pytest.approx([212.5] * 3)


def test_readable_by_a_swept_parameter_groups_rows_by_it_under_a_readable_name() -> None:
    table = tables.readable(tidy("arrival_rate_per_s"), ["failed"], by="arrival_rate_per_s")
    assert table.index.names == ["arrival rate (calls/s)", "architecture"]
    assert [rate for rate, _ in table.index] == [1, 1, 1, 4, 4, 4]
    assert [name for _, name in table.index][:3] == [
        "SSE + shared store",
        "sticky load balancer",
        "MRTR",
    ]
    assert table["failed"].tolist() == [3, 3, 3, 12, 12, 12]


def test_confidence_intervals_read_without_exponents_or_trailing_zeros() -> None:
    table = tables.readable(tidy(), ["failed"], with_ci=True)
    assert table["failed"].tolist() == ["3 ± 0.5"] * 3
    assert tables.significant(8634.2, 3) == "8,630"
    assert tables.significant(0.001234, 3) == "0.00123"
    assert tables.significant(110.4, 2) == "110"


def test_column_shows_named_quantities_under_a_title_counts_whole() -> None:
    table = tables.column(
        {"calls measured": 4854.0, "warm-up (s)": 300, "mean think (s)": 29.4712, "ok": True},
        "the deployment",
    )
    assert list(table.columns) == ["the deployment"]
    assert table["the deployment"].tolist() == [4854, 300, 29.47, "yes"]
    assert isinstance(table.loc["calls measured", "the deployment"], int)


def test_pivot_scales_to_the_headings_units_and_names_both_axes() -> None:
    runs = pd.DataFrame(
        [
            {"replicas": r, "policy": p, "p99_latency_s": 0.5 * r, "goodput_per_s": 10.0 * r}
            for r in (2, 4)
            for p in ("none", "mrtr-offload")
        ]
    )
    table = tables.pivot(runs, "replicas", "policy", ["p99_latency_s", "goodput_per_s"])
    assert table.index.name == "replicas"
    assert table.columns.names == [None, "shedding policy"]
    assert table[("p99 latency (ms)", "none")].tolist() == [1000, 2000]
    assert table[("goodput (calls/s)", "mrtr-offload")].tolist() == [20, 40]


def test_columns_side_by_side_keep_each_value_as_column_shows_it() -> None:
    table = tables.columns(
        {
            "sticky": {"calls cut": 464.0, "bill (USD)": 0.18412},
            "MRTR": {"calls cut": 0, "bill (USD)": 0.183},
        },
        digits=3,
    )
    assert list(table.columns) == ["sticky", "MRTR"]
    assert table.loc["calls cut"].tolist() == [464, 0]
    assert table.loc["bill (USD)"].tolist() == [0.184, 0.183]


def test_events_name_the_cluster_wide_ones_and_read_in_words() -> None:
    frame = pd.DataFrame(
        {
            "time_s": [400.0, 400.0],
            "kind": ["upgrade-start", "draining"],
            "replica": [-1, 0],
            "detail": ["to v2", "upgrade from v1"],
        }
    )
    table = tables.events(frame)
    assert list(table.columns) == ["time (s)", "event", "replica", "detail"]
    assert table["replica"].tolist() == ["all", 0]


def test_an_interval_never_reaches_where_its_quantity_cannot_go() -> None:
    """A count of 0.2 ± 0.555 (two replications) reads from 0, not from -0.355; a share
    of 96% ± 4.7 stops at 100%."""
    rows = pd.DataFrame(
        [
            {"architecture": "sticky", "metric": "lost", "mean": 0.2, "ci_half_width": 0.555},
            {"architecture": "sticky", "metric": "failed", "mean": 3.0, "ci_half_width": 0.5},
            {
                "architecture": "sticky",
                "metric": "completed_fraction",
                "mean": 0.96,
                "ci_half_width": 0.047,
            },
        ]
    )
    table = tables.readable(rows, ["lost", "failed", "completed_fraction"], with_ci=True)
    assert table.loc["sticky load balancer"].tolist() == [
        "0.2 (0 to 0.76)",
        "3 ± 0.5",
        "96 (91 to 100)",
    ]


def test_wide_turns_tidy_rows_into_a_row_per_group() -> None:
    wide = tables.wide(tidy("arrival_rate_per_s"), ["arrival_rate_per_s", "architecture"])
    assert list(wide.columns) == ["arrival_rate_per_s", "architecture", "failed", "p95_latency_s"]
    row = wide[(wide["arrival_rate_per_s"] == 4) & (wide["architecture"] == "mrtr")]
    assert row["failed"].tolist() == [12.0]

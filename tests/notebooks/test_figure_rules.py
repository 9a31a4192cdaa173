"""The check every figure of the notebooks passes: it accepts a figure a class can read and
names what is wrong with one it cannot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from lessons import figure_rules


@pytest.fixture(autouse=True)
def close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def readable() -> tuple[Figure, plt.Axes]:
    """Two series named in a legend beside the panel, a title, labelled axes."""
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([1, 2, 3], [1, 4, 9], label="sticky", linestyle="--", zorder=3)
    ax.plot([1, 2, 3], [1, 4, 9], label="MRTR")
    ax.set_title("Calls cut")
    ax.set_xlabel("drain timeout (s)")
    ax.set_ylabel("calls cut")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig, ax


def test_a_readable_figure_passes() -> None:
    fig, _ = readable()
    assert figure_rules.problems(fig) == []


def test_a_figure_without_a_title_or_axis_labels_is_named() -> None:
    fig, ax = readable()
    ax.set_title("")
    ax.set_xlabel("")
    found = figure_rules.problems(fig)
    assert any("no title" in p for p in found) and any("x axis has no label" in p for p in found)


def test_an_empty_panel_is_named() -> None:
    fig, ax = plt.subplots()
    ax.set_title("Nothing")
    assert any("empty" in p for p in figure_rules.problems(fig))


def test_several_series_need_a_legend_naming_them_all() -> None:
    fig, ax = readable()
    ax.get_legend().remove()
    assert any("no legend" in p for p in figure_rules.problems(fig))
    fig, ax = readable()
    ax.plot([1, 2, 3], [2, 2, 2], label="SSE + shared store")
    assert any("not in any legend" in p for p in figure_rules.problems(fig))


def test_a_legend_over_the_data_is_named() -> None:
    fig, ax = readable()
    ax.legend(loc="upper left")
    ax.plot([1.05, 1.1], [8, 8.5], label="_a point under the legend")
    fig.canvas.draw()
    assert any("drawn over" in p for p in figure_rules.problems(fig))


def test_a_series_hidden_under_another_is_named() -> None:
    fig, ax = readable()
    sticky = ax.get_lines()[0]
    sticky.set_linestyle("-")
    sticky.set_zorder(1)
    assert any("hidden under" in p for p in figure_rules.problems(fig))


def test_a_count_with_fractional_ticks_is_named() -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [2, 3, 3])
    ax.set(title="Autoscaling", xlabel="time (s)", ylabel="replicas billed")
    assert any("fractional ticks" in p for p in figure_rules.problems(fig))


def test_error_bars_below_zero_for_a_count_are_named() -> None:
    fig, ax = plt.subplots()
    ax.bar(["sticky", "MRTR"], [0.2, 0.0], yerr=[0.555, 0.0], label="lost")
    ax.set(title="Calls lost", ylabel="calls lost")
    assert any("below zero" in p for p in figure_rules.problems(fig))


def test_every_figure_a_kernel_renders_is_checked_and_written_down(tmp_path: Path) -> None:
    found = tmp_path / "figures.jsonl"
    uninstall = figure_rules.install(found)
    try:
        fig, ax = readable()
        ax.set_title("")
        fig.savefig(tmp_path / "figure.png")
    finally:
        uninstall()
    fig.savefig(tmp_path / "again.png")  # no longer checked
    lines = found.read_text().splitlines()
    assert len(lines) == 1 and "no title" in lines[0]

"""`labsim validate`, `compare` and `plan` say what they are doing before their first run,
with the number of runs, and show a bar of runs done on stderr even when it is no terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from labsim.cli import compare as compare_command
from labsim.cli import main as cli
from labsim.cli import plan as plan_command
from labsim.study import validation

ROOT = Path(__file__).resolve().parents[2]


class Started(Exception):
    """The command reached its runs: the test has seen what it said before them."""


def stop_at_the_runs(seen: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> Any:
    """A stand-in for a command's work: note what stderr held and how it was asked to
    show progress, then stop."""

    def work(*args: Any, **kwargs: Any) -> None:
        seen["stderr"] = capsys.readouterr().err
        seen["progress"] = kwargs.get("progress")
        raise Started

    return work


@pytest.mark.parametrize(
    ("argv", "module", "name", "totals"),
    [
        (["validate", "--replications", "4"], validation, "validate", "x 4 replications = "),
        (
            ["compare", "--scenario", "crash", "--replications", "2"],
            compare_command.experiments,
            "compare",
            "1 scenario x 3 architectures x 2 replications = 6 runs",
        ),
        (["plan", "--rate", "4"], plan_command, "plan", "3 runs a size (up to"),
    ],
)
def test_a_long_command_says_what_it_runs_before_its_first_run(
    argv: list[str],
    module: Any,
    name: str,
    totals: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(module, name, stop_at_the_runs(seen, capsys))  # its work: validate()...
    with pytest.raises(Started):
        cli.main(argv)
    assert seen["stderr"].startswith(f"labsim {name}: ")
    assert totals in seen["stderr"]
    assert seen["progress"] is True  # the bar, on a terminal or not


def test_validate_counts_its_runs_from_its_cases(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [validation.mmc_case(0.5, 1, 2_000), validation.mmc_case(0.7, 1, 2_000)]
    monkeypatch.setattr(validation, "standard_cases", lambda scale: cases)
    seen: dict[str, Any] = {}
    monkeypatch.setattr(validation, "validate", stop_at_the_runs(seen, capsys))
    with pytest.raises(Started):
        cli.main(["validate", "--replications", "3"])
    assert (
        "2 cases against queueing theory: 2 deployments x 3 replications = 6 runs"
        in (seen["stderr"])
    )


@pytest.mark.slow
def test_validate_shows_its_bar_in_a_log_file() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "labsim", "validate", "--scale", "0.02", "--replications", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    said, _, bar = done.stderr.partition("\n")
    assert said.startswith("labsim validate: ") and said.endswith(" runs")
    runs = said.rsplit("= ", 1)[1].split()[0]
    assert f"0/{runs}" in bar and f"{runs}/{runs}" in bar
    assert "cases agree with theory" in done.stdout

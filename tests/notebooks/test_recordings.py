"""A notebook's live part: run and kept where everything it needs is installed, shown from
its recording (said so, with when, from which commit, by which command) where not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lessons import recordings

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.fixture
def recorded_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(recordings, "RECORDED_DIR", tmp_path)
    return tmp_path


def test_with_everything_installed_the_part_runs_and_is_kept_only_when_asked(
    recorded_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECORD", raising=False)
    run = recordings.live_or_recorded(
        "06_x",
        "swarms",
        needed={"haproxy": True},
        parameters={"USERS": 4},
        run=lambda: {"n": (1, 2)},
    )
    assert run.data == {"n": [1, 2]} and not run.recorded and run.note == "live"
    assert not list(recorded_dir.iterdir())
    monkeypatch.setenv("RECORD", "1")
    recordings.live_or_recorded(
        "06_x", "swarms", needed={"haproxy": True}, parameters={"USERS": 4}, run=lambda: {"n": 3}
    )
    kept = json.loads((recorded_dir / "06_x.swarms.json").read_text())
    assert kept["data"] == {"n": 3} and kept["parameters"] == {"USERS": 4}
    assert (
        kept["command"] == "RECORD=1 python -m lessons.execution --out build notebooks/06_x.ipynb"
    )
    assert kept["recorded_on"] and kept["commit"]


def test_without_a_program_the_recording_is_shown_and_said_to_be_one(
    recorded_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RECORD", "1")
    recordings.live_or_recorded(
        "06_x", "swarms", needed={}, parameters={"USERS": 20}, run=lambda: {"n": 3}
    )
    capsys.readouterr()

    def must_not_run() -> None:
        raise AssertionError("the live part ran without haproxy")

    run = recordings.live_or_recorded(
        "06_x",
        "swarms",
        needed={"haproxy": False, "redis-server": True},
        parameters={"USERS": 4},
        run=must_not_run,
    )
    shown = capsys.readouterr().out
    assert run.recorded and run.data == {"n": 3} and run.parameters == {"USERS": 20}
    assert run.note == f"recorded {run.recorded_on}"
    assert "RECORDED RUN, not live: haproxy not installed" in shown
    assert run.command in shown and "USERS=20" in shown


def test_a_missing_recording_says_how_to_make_it(recorded_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"RECORD=1 python -m lessons\.execution"):
        recordings.read("06_x", "swarms")


@pytest.mark.parametrize(
    "path", sorted((NOTEBOOKS_DIR / "recorded").glob("*.json")), ids=lambda p: p.name
)
def test_each_committed_recording_says_when_and_how_it_was_made(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read where a notebook's kernel reads it: `recorded/` in the notebooks' folder.
    monkeypatch.setattr(recordings, "RECORDED_DIR", path.parent)
    notebook, part, _ = path.name.split(".")
    recording = recordings.read(notebook, part)
    assert recording.recorded_on and recording.commit
    assert recording.command == recordings.RECORD_COMMAND.format(notebook=notebook)
    assert (NOTEBOOKS_DIR / f"{notebook}.py").is_file()
    assert f'"{part}"' in (NOTEBOOKS_DIR / f"{notebook}.py").read_text()

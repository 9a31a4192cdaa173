"""Live parts of a notebook, shown from a recording where this machine cannot run them.

A few parts of the notebooks need programs beyond Python: HAProxy and Redis in front of
real replicas, Locust for a swarm. A student's laptop with only the notebooks' Python
packages has none of them. There such a part says what is missing and shows a run of
the very same cells recorded on a machine that had them, clearly marked as recorded:
its date, the commit, the command that made it, and the notebook's parameters it was
made with (which the notebook then uses, so what it computes from the run fits it).

A recording is made by running the notebook with RECORD=1 where everything is
installed; each live part then writes its results to `recorded/NN_name.PART.json`:

    RECORD=1 python -m lessons.execution --out build notebooks/06_live_swarm.ipynb
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Where recordings live: `recorded/` beside the notebooks, in the folder a notebook's
#: kernel runs in (Jupyter, nbclient and the book all start it in the notebook's own).
RECORDED_DIR = Path.cwd() / "recorded"
#: The command that makes a notebook's recordings (NOTEBOOK: its file name, no suffix).
RECORD_COMMAND = "RECORD=1 python -m lessons.execution --out build notebooks/{notebook}.ipynb"


@dataclass(frozen=True)
class LiveRun:
    """The results of a notebook's live part: run here just now, or recorded elsewhere.

    `data` is what the part's cells produced, as JSON (the same either way);
    `parameters` are the notebook's parameters it ran with.
    """

    data: Any
    parameters: dict[str, Any]
    recorded_on: str | None = None
    commit: str | None = None
    command: str | None = None

    @property
    def recorded(self) -> bool:
        """Whether this is a recording rather than a run on this machine."""
        return self.recorded_on is not None

    @property
    def note(self) -> str:
        """What a title adds to say where the results come from."""
        return f"recorded {self.recorded_on}" if self.recorded else "live"


def missing_programs(needed: Mapping[str, bool]) -> list[str]:
    """The names in `needed` (program -> installed here) that are not installed."""
    return [name for name, installed in needed.items() if not installed]


def path_of(notebook: str, part: str) -> Path:
    """Where the recording of `notebook`'s live `part` is kept."""
    return RECORDED_DIR / f"{notebook}.{part}.json"


def live_or_recorded(
    notebook: str,
    part: str,
    *,
    needed: Mapping[str, bool],
    parameters: Mapping[str, Any],
    run: Callable[[], Any],
) -> LiveRun:
    """Run a live part where everything it needs is installed, else show its recording.

    `needed` names the programs the part needs and whether each is installed; `run` does
    the part and returns its results (made JSON either way). With RECORD=1 in the
    environment a live run is also written as the part's recording.
    """
    missing = missing_programs(needed)
    if not missing:
        data = json.loads(json.dumps(run()))
        live = LiveRun(data, dict(parameters))
        if os.environ.get("RECORD") == "1":
            write(notebook, part, live)
        return live
    recording = read(notebook, part)
    print(banner(recording, missing))
    return recording


def write(notebook: str, part: str, live: LiveRun) -> Path:
    """Keep `live` as the recording of `notebook`'s `part`, with its date and commit."""
    path = path_of(notebook, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "recorded_on": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "commit": _commit(),
        "command": RECORD_COMMAND.format(notebook=notebook),
        "parameters": live.parameters,
        "data": live.data,
    }
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read(notebook: str, part: str) -> LiveRun:
    """The recording of `notebook`'s `part`."""
    path = path_of(notebook, part)
    if not path.is_file():
        raise FileNotFoundError(
            f"no recording of {notebook}'s {part} ({path.name}): make it where everything is "
            f"installed with `{RECORD_COMMAND.format(notebook=notebook)}`"
        )
    document = json.loads(path.read_text(encoding="utf-8"))
    return LiveRun(
        document["data"],
        document["parameters"],
        document["recorded_on"],
        document["commit"],
        document["command"],
    )


def banner(recording: LiveRun, missing: list[str]) -> str:
    """What a notebook prints above a recorded run: why, when, how, with what."""
    parameters = ", ".join(f"{name}={value!r}" for name, value in recording.parameters.items())
    return "\n".join(
        [
            f"RECORDED RUN, not live: {', '.join(missing)} not installed on this machine.",
            f"Recorded on {recording.recorded_on} (commit {recording.commit}) with:",
            f"    {recording.command}",
            f"Its parameters, used from here on: {parameters}",
        ]
    )


def _commit() -> str:
    """The commit the recording was made from, short; "unknown" outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=RECORDED_DIR.parent,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return done.stdout.strip()

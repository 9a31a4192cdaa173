"""`labsim compare` gives the same figures for the same seed as the recorded run.

`compare_seed_fixture.json` holds, for a few small cases, the arguments given to
`python -m labsim compare`, the table it printed (less the elapsed time) and the JSON it
wrote. The fixture was recorded from the command as it stood before the package was
rearranged, and recorded again when the model gained the balancer's health checks, the
connections it keeps for reuse and the percentiles over every call: those added their
figures (`refused_requests`, `down_marks`, `p95_latency_all_s` ...), and a task's polls
now hold connections (`peak_replica_connections` of `persistent-store-outage`); every
other figure stayed as it was. Its printed tables were recorded again when an interval that
would reach below what a metric can take came to be printed clipped ("0.50 (0.00 to 6.85)"),
the JSON unchanged. Its SSE + store figures were recorded again when a legacy user's
session came to open through the balancer (`initialize` and its notification taking
their turns of the round robin before the call), the other architectures' unchanged. A
change to the model, the scenarios or the statistics
that moves a number fails here. The printed table must match line for line; the JSON
number for number, to 1e-9 relative (floats may round differently in their last digit).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = json.loads((Path(__file__).with_name("compare_seed_fixture.json")).read_text())
RELATIVE_TOLERANCE = 1e-9


def differences(recorded: Any, now: Any, where: str = "$") -> list[str]:
    """Where `now` departs from `recorded`: values, keys, lengths and types, by JSON path."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        if recorded.keys() != now.keys():
            return [f"{where}: keys {sorted(recorded)} became {sorted(now)}"]
        return [d for k in recorded for d in differences(recorded[k], now[k], f"{where}.{k}")]
    if isinstance(recorded, list) and isinstance(now, list):
        if len(recorded) != len(now):
            return [f"{where}: {len(recorded)} items became {len(now)}"]
        return [
            d
            for k, (r, n) in enumerate(zip(recorded, now, strict=True))
            for d in differences(r, n, f"{where}[{k}]")
        ]
    figures = (
        isinstance(value, int | float) and not isinstance(value, bool) for value in (recorded, now)
    )
    if all(figures):
        if math.isclose(recorded, now, rel_tol=RELATIVE_TOLERANCE, abs_tol=0.0):
            return []
        return [f"{where}: {recorded!r} became {now!r}"]
    return [] if recorded == now else [f"{where}: {recorded!r} became {now!r}"]


def test_differences_sees_a_changed_figure() -> None:
    recorded = {"results": [{"metric": "lost", "mean": 2.0}]}
    assert differences(recorded, {"results": [{"metric": "lost", "mean": 2.0 + 1e-12}]}) == []
    assert differences(recorded, {"results": [{"metric": "lost", "mean": 2.001}]}) == [
        "$.results[0].mean: 2.0 became 2.001"
    ]
    assert differences(recorded, {"results": []}) == ["$.results: 1 items became 0"]


@pytest.mark.parametrize(
    "case", FIXTURE["cases"], ids=[case["args"][1] for case in FIXTURE["cases"]]
)
@pytest.mark.slow
def test_compare_prints_and_writes_the_recorded_figures(
    case: dict[str, Any], tmp_path: Path
) -> None:
    written = tmp_path / "compare.json"
    done = subprocess.run(
        [sys.executable, "-m", "labsim", "compare", *case["args"], "--json", str(written)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    printed = [line for line in done.stdout.splitlines() if not line.startswith("elapsed:")]
    assert printed == case["stdout"]
    assert differences(case["json"], json.loads(written.read_text())) == []

"""Which calibration runs met a machine busy with other work, and are left out.

A replica that waits for a CPU other programs hold serves its rounds late. The scheduler
counts that wait (`loadtest/probes/replica_cpu.py`), and the twin takes it into the
service time (a round's busy time is its CPU and its wait), so a steady wait is modelled;
a heavy or sudden one is not. A run whose replica waited for a CPU more than
`DISTURBED_WAIT_SHARE` of its busy time in its steady window, or more than twice the
calibration's typical share (a burst), is disturbed. On a quiet machine the share is
0.02-0.03 (the runs of 2026-12-04); with the lab's neighbours at work 0.11-0.23, and
the twins still within 13% of live at every level (sticky, 2026-12-06 00:34 UTC); at
0.35-0.60 a p95 was 3-5x its twin's (mrtr, 00:19 UTC).

The probe sets the delay outside the replica (client, balancer, wire) for every twin, so
it runs `repeats` times too and the twins take the median probe's delay. A probe whose
delay is more than `PROBE_DELAY_SPREAD` times the probes' median (the load generator or
the balancer met other work: one `sse-store` probe of 2026-12-04 gave three times the
others') is disturbed. When most level runs were disturbed the machine was busy
throughout, and the probes' delay with it: the report says so.

A level's figures are the medians of its undisturbed runs; a level with fewer than
`MIN_QUIET_RUNS` of them is flagged, not reported, and so is a calibration whose probes
were all disturbed.
"""

from __future__ import annotations

import statistics
from typing import Any

#: Share of a replica's busy time spent waiting for a CPU beyond which its run is disturbed
#: however its neighbours fared.
DISTURBED_WAIT_SHARE = 0.30
#: A run waiting more than this many times the calibration's typical share (the median
#: over its level runs), and at least `OUTLIER_FLOOR`, met a burst of other work.
OUTLIER_FACTOR = 2.0
OUTLIER_FLOOR = 0.10
#: How far a probe's delay may lie above the probes' median before it is disturbed.
PROBE_DELAY_SPREAD = 1.5
#: Undisturbed runs a level needs for its medians to be reported.
MIN_QUIET_RUNS = 2


def wait_share(run: dict[str, Any]) -> float:
    """The share of the replica's busy time in the run's steady window (its whole run
    when it has none) spent waiting for a CPU that other programs held."""
    window = run.get("window") or run["cpu"]
    busy_s = window["cpu_s"] + window["wait_s"]
    return window["wait_s"] / busy_s if busy_s > 0 else 0.0


def run_disturbance(run: dict[str, Any], typical_share: float | None = None) -> str | None:
    """Why a run is disturbed, or None: its replica waited for a CPU more than
    `DISTURBED_WAIT_SHARE` of its busy time, or more than `OUTLIER_FACTOR` times the
    `typical_share` of the calibration's runs (and `OUTLIER_FLOOR`)."""
    share = wait_share(run)
    if share > DISTURBED_WAIT_SHARE:
        return (
            f"the replica waited for a CPU {share:.0%} of its busy time (more than "
            f"{DISTURBED_WAIT_SHARE:.0%}: other programs held the machine)"
        )
    if typical_share is not None and share > max(OUTLIER_FLOOR, OUTLIER_FACTOR * typical_share):
        return (
            f"the replica waited for a CPU {share:.0%} of its busy time, more than "
            f"{OUTLIER_FACTOR:g}x the other runs' {typical_share:.0%} (a burst of other work)"
        )
    return None


def typical_wait_share(runs: list[dict[str, Any]]) -> float:
    """The median wait share over a calibration's level runs: the machine as it was."""
    return statistics.median(wait_share(run) for run in runs) if runs else 0.0


def probe_disturbances(delays_s: list[float]) -> list[str | None]:
    """Why each probe is disturbed (its delay is far above the probes' median), or None.

    Not by its replica's wait: a probe's round is a fraction of a millisecond of CPU, and
    a replica woken for one waits about a quarter of its busy time for a CPU even when the
    levels beside it wait 0.07 (2026-12-06), so the share says nothing of the machine."""
    median_s = statistics.median(delays_s)
    found: list[str | None] = []
    for delay_s in delays_s:
        reason = None
        if median_s > 0 and delay_s > PROBE_DELAY_SPREAD * median_s:
            reason = (
                f"its delay outside the replica, {delay_s * 1e3:.2f} ms a round, is more than "
                f"{PROBE_DELAY_SPREAD:g}x the probes' median ({median_s * 1e3:.2f} ms)"
            )
        found.append(reason)
    return found


def median_probe(delays_s: list[float], reasons: list[str | None]) -> int:
    """The probe whose delay the twins take: the median of the undisturbed ones (of all,
    if every one was disturbed)."""
    quiet = [i for i, reason in enumerate(reasons) if reason is None] or list(range(len(delays_s)))
    ordered = sorted(quiet, key=lambda i: delays_s[i])
    return ordered[(len(ordered) - 1) // 2]

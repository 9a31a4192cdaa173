"""The calibration's rolling upgrade: two replicas replaced under load, live and simulated.

The drain timeout is short enough to cut calls under both legacy architectures, so the
live count of lost calls, re-prompts and restarts can be set beside the simulated twin's
(MRTR: none in both).
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

from loadtest.calibration.model import LiveInputs, predict_upgrade
from loadtest.calibration.run import Progress, level_config, run_level
from loadtest.harness.upgrade import restart_s

#: The rolling upgrade keeps shorter pacing: its users are its sessions, and at 2 s each
#: one makes several calls in the run (what a sticky cookie pins to a replica).
UPGRADE_PACING_S = 2.0
#: The rolling upgrade: two replicas, its load as a share of the (shared) core, when it
#: starts, how long a replica may drain, and the users' think time. The drain timeout is
#: short enough that it cuts calls under both legacy architectures: at 1 s SSE + store
#: cut 0 or 1 a run (0.3 live against 0.6 simulated over 3 runs, too few to compare); at
#: 0.3 s 3-6 a run, and sticky 8-18.
UPGRADE_UTILIZATION = 0.3
UPGRADE_AT_S = 4.0
UPGRADE_DRAIN_TIMEOUT_S = 0.3
UPGRADE_THINK_MEDIAN_S = 0.5
UPGRADE_THINK_SIGMA = 0.6


def run_upgrade(
    arch: str,
    inputs: LiveInputs,
    busy_per_call_s: float,
    duration_s: float,
    progress: Progress,
    repeats: int = 1,
) -> dict[str, Any]:
    """A live rolling upgrade of two replicas, `repeats` times, and its simulated twin.

    A run cuts a handful of calls at most, so one run's count is mostly chance: live
    figures are means over the runs (each run's kept), as the simulated ones are over seeds.
    """
    rate = UPGRADE_UTILIZATION / busy_per_call_s
    config = level_config(
        arch,
        rate,
        duration_s,
        scenario="rolling-upgrade",
        replicas=2,
        fault_at_s=UPGRADE_AT_S,
        drain_timeout_s=UPGRADE_DRAIN_TIMEOUT_S,
        think_time_median_s=UPGRADE_THINK_MEDIAN_S,
        think_time_sigma=UPGRADE_THINK_SIGMA,
        pacing_s=UPGRADE_PACING_S,
    )
    runs = []
    for repeat in range(repeats):
        progress(
            f"rolling upgrade {repeat + 1}/{repeats}: 2 replicas, {rate:.1f} calls/s "
            f"for {duration_s:g} s"
        )
        live = run_level(config, progress)
        runs.append(
            {
                "lost": live["lost"],
                "re_prompts": live["re_prompts"],
                "restarts": live["retries"],
                "calls": live["calls"],  # the whole run's, as the twin's are
                "restart_s": restart_s(live["faults"]),
                "offered_per_s": live["offered_per_s"],
            }
        )
    restart = statistics.fmean(run["restart_s"] for run in runs)
    # The twin is offered what the users started, not the rate asked: a user's next call
    # waits for its last (think time included) to end, so at 2 s pacing about a third of
    # the calls asked for never start (in a trial, 179 calls live where 272 were asked).
    offered = statistics.fmean(run["offered_per_s"] for run in runs)
    simulated = predict_upgrade(
        replace(
            inputs, think_time_median_s=UPGRADE_THINK_MEDIAN_S, think_time_sigma=UPGRADE_THINK_SIGMA
        ),
        arch,
        replicas=2,
        rate_per_s=offered,
        duration_s=duration_s,
        upgrade_at_s=UPGRADE_AT_S,
        drain_timeout_s=UPGRADE_DRAIN_TIMEOUT_S,
        restart_s=restart,
        # A live user is one session: the calls it made in the run.
        calls_per_session=statistics.fmean(run["calls"] for run in runs) / config.users,
    )
    # Calls started again (legacy) or rounds sent again (MRTR) after a cut: live, a cut
    # shows when the answer is refused; simulated, at once (no re-prompt if unanswered).
    simulated["restarts"] += simulated["retries"]

    def figure(key: str) -> dict[str, Any]:
        measured = [run[key] for run in runs]
        return {
            "measured": statistics.fmean(measured),
            "predicted": simulated[key],
            "measured_runs": measured,
        }

    return {
        "rate_per_s": rate,
        "offered_per_s": offered,
        "drain_timeout_s": UPGRADE_DRAIN_TIMEOUT_S,
        "think_time_median_s": UPGRADE_THINK_MEDIAN_S,
        "restart_s": restart,
        "repeats": repeats,
        **{key: figure(key) for key in ("lost", "re_prompts", "restarts", "calls")},
    }

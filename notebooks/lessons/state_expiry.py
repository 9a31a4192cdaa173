"""Who finds their sealed `requestState` expired: notebook 08's simulated share of answers
that came after the state's TTL, beside the think-time lognormal's tail beyond it (and
the test that checks that claim at other seeds)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
from scipy import stats

import labsim

SIMULATED = "simulated share asked again"
TAIL = "P(think > TTL)"


def expiry_beside_tail(
    think_medians_s: Iterable[float], seed: int, horizon_s: float
) -> pd.DataFrame:
    """For each median think time, one MRTR run of a two-round tool whose users take as
    long as they like: the share of answers that found their state expired (`SIMULATED`)
    and the lognormal's tail beyond the TTL (`TAIL`), indexed by the median."""
    base = labsim.SimParams()
    rows = []
    for median_s in think_medians_s:
        slow = base.with_overrides(
            tools=("update_work_item",),
            tool_mix=(1.0,),
            think_time_median_s=float(median_s),
            never_answer_share=0.0,
            answer_timeout_s=86_400.0,
            arrival_rate_per_s=1.0,
            horizon_s=horizon_s,
            warmup_s=600.0,
        )
        calls = labsim.simulate(slow, "mrtr", seed=seed).measured_calls()
        expiries = calls["expired_states"].sum()
        # The answers that came with a state to open: each one that found it expired, and
        # the second answer of each call that completed. (A call whose state expires more
        # than `client.max_call_restarts` times is given up, so counting every answer
        # would not do.)
        checked = expiries + (calls["outcome"] == "completed").sum()
        tail = stats.lognorm(s=base.workload.think_time_sigma, scale=median_s)
        rows.append(
            {
                "median think (s)": median_s,
                SIMULATED: expiries / checked,
                TAIL: tail.sf(base.state.state_ttl_s),
            }
        )
    return pd.DataFrame(rows).set_index("median think (s)")

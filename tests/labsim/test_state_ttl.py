"""requestState lifetime: a user who answers after the TTL is asked again from the start."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from labsim import SimParams, simulate

# update_work_item: its second round carries the first answer in requestState.
SLOW_USERS = {
    "tools": ("update_work_item",),
    "tool_mix": (1.0,),
    "think_time_median_s": 300.0,
    "think_time_sigma": 1.0,
    "never_answer_share": 0.0,
    "answer_timeout_s": 86_400.0,
    "arrival_rate_per_s": 2.0,
    "horizon_s": 3600.0,
    "warmup_s": 600.0,
}


@pytest.mark.slow
def test_answers_after_the_ttl_are_asked_again_from_the_first_question() -> None:
    params = SimParams().with_overrides(**SLOW_USERS)
    calls = simulate(params, "mrtr", seed=4).measured_calls()
    expired = calls[calls["expired_states"] > 0]
    assert len(expired) > 0
    # Each expiry re-asks the first question: one re-prompt per expiry, at least.
    assert (expired["re_prompts"] >= expired["expired_states"]).all()
    # Nobody else is asked twice.
    assert calls.loc[calls["expired_states"] == 0, "re_prompts"].sum() == 0
    # The share of state-carrying answers that came too late: P(think > TTL).
    late = stats.lognorm(s=1.0, scale=300.0).sf(params.state.state_ttl_s)
    # Every call answers the first question once, plus once more after each expiry; the
    # other answers are the second question's, each sent back with a state.
    expiries = calls["expired_states"].sum()
    carrying = calls["answers"].sum() - len(calls) - expiries
    share = expiries / carrying
    assert share == pytest.approx(late, rel=0.25)
    assert (calls["outcome"].isin(["completed", "lost"])).all()


@pytest.mark.slow
def test_a_long_enough_ttl_or_the_legacy_protocol_asks_nobody_again() -> None:
    params = SimParams().with_overrides(**SLOW_USERS)
    forever = simulate(params.with_overrides(state_ttl_s=1e9), "mrtr", seed=4).summary
    assert forever["expired_states"] == 0 and forever["re_prompts"] == 0
    legacy = simulate(params, "sticky", seed=4).calls
    assert legacy["expired_states"].sum() == 0
    assert np.isfinite(legacy["end_s"]).all()

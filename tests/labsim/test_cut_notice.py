"""When a legacy client learns its held call was cut: at once, or when its answer is refused."""

from __future__ import annotations

from labsim import simulate
from labsim.model.faults import RollingUpgrade
from labsim.model.params import SimParams


def upgrade_summary(on_answer: bool) -> dict:
    # Think time (median 2 s) far beyond the drain timeout (0.2 s): the drains cut users
    # in the middle of answering.
    params = SimParams().with_overrides(
        replicas=2,
        arrival_rate_per_s=4.0,
        horizon_s=80.0,
        warmup_s=0.0,
        tool_mix=(0.0, 1.0, 0.0),  # get_weather: one question
        think_time_median_s=2.0,
        think_time_sigma=0.3,
        never_answer_share=0.0,
        faults=(RollingUpgrade(at_s=20.0, drain_timeout_s=0.2, restart_s=1.0),),
        cut_noticed_on_answer=on_answer,
    )
    return simulate(params, "sticky", seed=3).summary


def test_a_cut_noticed_only_when_the_answer_is_refused_re_asks_an_answered_question() -> None:
    at_once, on_answer = upgrade_summary(False), upgrade_summary(True)
    assert at_once["restarts"] > 0 and on_answer["restarts"] > 0
    # At once: the cut user had not answered, so the restarted call asks nothing twice.
    assert at_once["re_prompts"] == 0
    # On answer: every user cut while thinking answered first and is asked again.
    assert on_answer["re_prompts"] >= 0.8 * on_answer["restarts"]

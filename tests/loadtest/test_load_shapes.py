"""Each load shape's schedule as Locust asks for it (tick() at each second), and the
ceiling's steps: their rates, their figures, where the SLO broke."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from loadtest.swarm.load_shapes import LabShape, ShapeSettings, shape_of
from loadtest.swarm.rate_ceiling import CeilingSearch, RateSteps, ceiling, ceiling_lines


def ticks_at(shape: Any, times: Any) -> list[Any]:
    """tick() at each of `times` (seconds into the run)."""
    ticks = []
    for t in times:
        shape.get_run_time = lambda t=t: float(t)
        ticks.append(shape.tick())
    return ticks


def schedule(shape: Any, seconds: int) -> list[Any]:
    """tick() at each whole second of the run, as Locust's shape worker asks."""
    return ticks_at(shape, range(seconds))


def users(shape: LabShape, seconds: int) -> list[int | None]:
    return [None if tick is None else tick[0] for tick in schedule(shape, seconds)]


def test_ramp_reaches_its_users_over_the_ramp_then_holds_until_the_end() -> None:
    ramp = shape_of("ramp", ShapeSettings(users=10, duration_s=8, ramp_s=5))
    assert users(ramp, 9) == [1, 2, 4, 6, 8, 10, 10, 10, None]


def test_step_adds_its_users_every_step_up_to_the_most() -> None:
    step = shape_of("step", ShapeSettings(users=5, duration_s=10, step_s=3, step_users=2))
    assert users(step, 11) == [2, 2, 2, 4, 4, 4, 5, 5, 5, 5, None]


def test_spike_jumps_for_its_length_then_comes_back() -> None:
    spike = shape_of(
        "spike", ShapeSettings(users=2, duration_s=8, spike_users=12, spike_at_s=3, spike_s=2)
    )
    assert users(spike, 9) == [2, 2, 2, 12, 12, 2, 2, 2, None]
    assert schedule(spike, 4)[3] == (12, 100.0)  # a spike starts its users at once


def test_soak_ramps_then_holds_its_users_for_the_whole_run() -> None:
    soak = shape_of("soak", ShapeSettings(users=4, duration_s=600, ramp_s=4))
    ticks = users(soak, 601)
    assert ticks[:5] == [1, 1, 2, 3, 4] and set(ticks[4:600]) == {4} and ticks[600] is None


SEARCH = CeilingSearch(
    rate_step_per_s=2.0, step_s=5.0, max_steps=4, slo_p95_ms=100.0, max_error_share=0.01
)


def test_the_ceilings_steps_add_one_stream_each_step_until_the_last() -> None:
    steps = RateSteps(SEARCH)
    # Each step is judged `settle_s` (0.35 s) after its end: the tick at its end still
    # gives its streams, the next the next step's.
    assert [t if t is None else t[0] for t in schedule(steps, 21)] == [1] * 6 + [2] * 5 + [
        3
    ] * 5 + [4] * 4 + [None]
    assert [SEARCH.rate_of(k) for k in (1, 2, 3, 4)] == [2.0, 4.0, 6.0, 8.0]
    assert steps.last_step == 4 and not steps.stopped_on_break


def test_a_step_is_judged_once_its_calls_have_had_the_slos_time_to_answer() -> None:
    judged: list[float] = []
    clock = {"t": 0.0}
    steps = RateSteps(SEARCH, broken=lambda step: judged.append(clock["t"]) or False)
    assert SEARCH.settle_s == pytest.approx(0.35)
    for t in (4.9, 5.0, 5.34):
        clock["t"] = t
        assert ticks_at(steps, [t]) == [(1, 1.0)] and judged == []
    clock["t"] = 5.35
    assert ticks_at(steps, [5.35]) == [(2, 2.0)] and judged == [5.35]
    # The search is asked again at the next step's start or judgement, whichever is first.
    steps.get_run_time = lambda: 6.0
    assert steps.next_tick_s() == pytest.approx(4.0)
    steps.get_run_time = lambda: 10.1
    assert steps.next_tick_s() == pytest.approx(0.25)


def test_the_ceilings_steps_stop_after_the_first_that_broke() -> None:
    judged: list[int] = []
    steps = RateSteps(SEARCH, broken=lambda step: judged.append(step) or step == 2)
    ticks = schedule(steps, 15)
    assert ticks[:11] == [(1, 1.0)] * 6 + [(2, 2.0)] * 5 and ticks[11] is None
    assert judged == [1, 2] and steps.judged == 2
    assert steps.last_step == 2 and steps.stopped_on_break


CONFIRMING = dataclasses.replace(SEARCH, max_steps=6, confirm_breaks=True)


def test_a_step_that_breaks_once_runs_again_at_its_rate_and_the_search_goes_on() -> None:
    steps = RateSteps(CONFIRMING, broken=lambda step: step == 2)
    ticks = [t if t is None else t[0] for t in schedule(steps, 31)]
    assert ticks == [1] * 6 + [2] * 5 + [2] * 5 + [3] * 5 + [4] * 5 + [5] * 4 + [None]
    assert steps.streams[:6] == [1, 2, 2, 3, 4, 5]


def test_a_break_confirmed_by_its_repeat_stops_the_search() -> None:
    steps = RateSteps(CONFIRMING, broken=lambda step: step in (2, 3))
    ticks = [t if t is None else t[0] for t in schedule(steps, 20)]
    assert ticks[:16] == [1] * 6 + [2] * 5 + [2] * 5 and ticks[16] is None
    assert steps.judged == 3 and steps.last_step == 3


def test_without_confirming_the_first_break_stops_the_search() -> None:
    steps = RateSteps(SEARCH, broken=lambda step: step == 2)
    ticks = schedule(steps, 15)
    assert ticks[11] is None and steps.streams == [1, 2]


def call(started: float, latency_ms: float, outcome: str = "completed") -> dict[str, Any]:
    return {"started": started, "ended": started + latency_ms / 1e3, "outcome": outcome,
            "latency_ms": latency_ms}  # fmt: skip


def test_the_ceiling_is_the_last_step_that_held_before_the_first_that_broke() -> None:
    t0 = 1000.0
    calls = (
        [call(t0 + i * 0.5, 40) for i in range(10)]  # step 1: fast
        + [call(t0 + 5 + i * 0.25, 60) for i in range(20)]  # step 2: within the SLO
        + [call(t0 + 10 + i * 0.2, 400) for i in range(25)]  # step 3: too slow
        + [call(t0 + 15 + i * 0.2, 40) for i in range(25)]  # step 4 held, but after a break
    )
    found = ceiling(SEARCH, calls, t0, 4)
    assert found["ceiling_rate_per_s"] == 4.0 and found["broke_at_step"] == 3
    assert [s["held"] for s in found["steps"]] == [True, True, False, True]
    assert found["steps"][1] == {
        "step": 2, "rate_per_s": 4.0, "started": 20, "completed": 20, "failed": 0, "lost": 0,
        "p95_ms": 60.0, "error_share": 0.0, "held": True,
    }  # fmt: skip
    lines = ceiling_lines(found)
    assert "ceiling: 4 calls/s" in lines[-2]
    assert lines[-1] == (
        "step 3 broke once its last calls were answered; judged 0.35 s after its end it had "
        "held, and the search ran on to step 4"
    )
    # Where the search stopped at the break, as it does when it knew, nothing more is said.
    at_break = ceiling(SEARCH, calls[:55], t0, 3, stopped_at_step=3)
    assert ceiling_lines(at_break)[-1] == "ceiling: 4 calls/s (p95 <= 100 ms, errors <= 0.01)"


def test_a_search_stopped_by_a_step_that_held_once_every_answer_was_in_says_so() -> None:
    """The search judged step 2 broken by what it had 0.35 s after its end; its later
    answers tip it back: the report keeps the step's rate as the ceiling, no more."""
    t0 = 1000.0
    calls = [call(t0 + i * 0.25, 40) for i in range(40)]
    found = ceiling(SEARCH, calls, t0, 2, stopped_at_step=2)
    assert found["broke_at_step"] is None and found["ceiling_rate_per_s"] == 4.0
    lines = ceiling_lines(found)
    assert not any("above the last rate tried" in line for line in lines), lines
    assert lines[-1] == (
        "the search stopped at step 2, broken by its calls answered within 0.35 s of its "
        "end; with its later answers it held: the ceiling is at least the rate above"
    )


def test_a_break_whose_repeat_held_is_not_the_ceiling_and_a_confirmed_one_is() -> None:
    t0 = 1000.0
    slow, fast = 400, 40
    latencies = [fast, slow, fast, slow, slow]  # steps 1-5 at 1, 2, 2, 3, 3 streams
    calls = [
        call(t0 + 5 * k + i * 0.2, latency)
        for k, latency in enumerate(latencies)
        for i in range(25)
    ]
    found = ceiling(CONFIRMING, calls, t0, 5, streams=[1, 2, 2, 3, 3])
    assert [s["rate_per_s"] for s in found["steps"]] == [2.0, 4.0, 4.0, 6.0, 6.0]
    assert found["unconfirmed_breaks"] == [2] and found["broke_at_step"] == 4
    assert found["ceiling_rate_per_s"] == 4.0
    lines = ceiling_lines(found)
    assert "broke once and held when run again at its rate (not the ceiling): 2" in lines
    # Without confirming, the same steps end at the first break.
    plain = ceiling(SEARCH, calls[:50], t0, 2)
    assert plain["ceiling_rate_per_s"] == 2.0 and plain["broke_at_step"] == 2


@pytest.mark.parametrize("outcome", ["failed", "lost"])
def test_a_step_with_too_many_errors_breaks_however_fast(outcome: str) -> None:
    calls = [call(1000 + i * 0.1, 10) for i in range(40)] + [call(1001, 10, outcome)]
    found = ceiling(SEARCH, calls, 1000.0, 1)
    assert found["ceiling_rate_per_s"] is None and found["steps"][0]["error_share"] > 0.01
    assert "the first step broke" in ceiling_lines(found)[-1]


def test_the_ceiling_says_the_simulations_beside_it_or_why_there_is_none() -> None:
    calls = [call(1000 + i * 0.1, 10) for i in range(40)]
    found = ceiling(SEARCH, calls, 1000.0, 1)
    beside = ceiling_lines({**found, "predicted_ceiling_rate_per_s": 6.0, "predicted_steps": [1]})
    assert beside[-1] == "simulation: the same replicas meet the SLO up to 6 calls/s"
    refused = ceiling_lines({**found, "prediction_error": "no tool 'book_room'"})
    assert refused[-1] == "simulation: no ceiling: no tool 'book_room'"

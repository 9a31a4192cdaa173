"""Acceptance: the simulation agrees with queueing theory where theory has an answer.

Every case runs the same model code the architectures use (MRTR with tools
that ask nothing), with fixed seeds and independent replications. A case
passes when theory lies inside the simulation's 99% confidence interval; the
interval must also be narrow enough to catch a wrong model, or the check
would be toothless.
"""

from __future__ import annotations

import pytest

from labsim.study import theory
from labsim.study.validation import (
    Case,
    Verdict,
    littles_law_case,
    mmc_case,
    mmck_case,
    queueing_params,
    routing_case,
    validate,
)

pytestmark = pytest.mark.slow

REPLICATIONS = 8
LEVEL = 0.99

CASES: dict[str, tuple[Case, float]] = {
    # name: (case, widest acceptable CI half-width relative to theory)
    "erlang-c-1-0.5": (mmc_case(0.5, 1, 8_000), 0.15),
    "erlang-c-2-0.8": (mmc_case(0.8, 2, 20_000), 0.25),
    "erlang-c-4-0.9": (mmc_case(0.9, 4, 40_000), 0.35),
    "erlang-c-4-0.9-waiting": (
        Case(
            "M/M/4 probability of waiting, rho=0.9",
            "Erlang C itself: the share of calls that queue",
            queueing_params(3.6, 1.0, 40_000, workers_per_replica=4),
            "waited_fraction",
            theory.erlang_c(4, 3.6),
        ),
        0.05,
    ),
    "mmck-2-5": (mmck_case(0.9, 2, 5, 6_000), 0.10),
    "mmck-overloaded": (mmck_case(1.5, 1, 4, 5_000), 0.10),
    "random": (routing_case("random", 0.7, 4, 12_000), 0.15),
    "round-robin": (routing_case("round-robin", 0.7, 4, 12_000), 0.15),
    "power-of-two": (routing_case("power-of-two", 0.9, 100, 20_000), 0.10),
    "littles-law": (littles_law_case("steady"), 0.10),
}


@pytest.fixture(scope="module")
def verdicts() -> dict[str, Verdict]:
    names = list(CASES)
    results = validate(
        [CASES[name][0] for name in names], replications=REPLICATIONS, seed=5, level=LEVEL
    )
    return dict(zip(names, results, strict=True))


def assert_agrees(verdict: Verdict, widest: float) -> None:
    case = verdict.case
    assert verdict.replications == REPLICATIONS
    assert verdict.ci_half_width < widest * abs(case.theory), (
        f"{case.name}: interval too wide to test anything (± {verdict.ci_half_width:.3g})"
    )
    assert verdict.passed, (
        f"{case.name}: simulated {verdict.mean:.4g} ± {verdict.ci_half_width:.3g}, "
        f"theory {case.theory:.4g} (tolerance {case.tolerance:.0%})"
    )


@pytest.mark.parametrize("name", ["erlang-c-1-0.5", "erlang-c-2-0.8", "erlang-c-4-0.9"])
def test_mean_wait_matches_erlang_c(verdicts: dict[str, Verdict], name: str) -> None:
    assert_agrees(verdicts[name], CASES[name][1])


def test_share_of_calls_that_wait_matches_erlang_c(verdicts: dict[str, Verdict]) -> None:
    assert_agrees(verdicts["erlang-c-4-0.9-waiting"], CASES["erlang-c-4-0.9-waiting"][1])


@pytest.mark.parametrize("name", ["mmck-2-5", "mmck-overloaded"])
def test_connection_limit_blocks_as_mmck_predicts(verdicts: dict[str, Verdict], name: str) -> None:
    assert_agrees(verdicts[name], CASES[name][1])


def test_random_routing_makes_each_replica_an_mm1(verdicts: dict[str, Verdict]) -> None:
    assert_agrees(verdicts["random"], CASES["random"][1])


def test_round_robin_makes_each_replica_an_erlang_arrivals_queue(
    verdicts: dict[str, Verdict],
) -> None:
    assert_agrees(verdicts["round-robin"], CASES["round-robin"][1])
    # The two routings are told apart: their intervals do not overlap.
    random, round_robin = verdicts["random"], verdicts["round-robin"]
    assert round_robin.mean + round_robin.ci_half_width < random.mean - random.ci_half_width


def test_power_of_two_choices_matches_mitzenmacher_at_large_n(
    verdicts: dict[str, Verdict],
) -> None:
    verdict = verdicts["power-of-two"]
    assert verdict.case.params.cluster.replicas >= 100
    assert_agrees(verdict, CASES["power-of-two"][1])
    # Far from what random routing would give at the same load (10 mean service times).
    assert verdict.mean < theory.random_routing_mean_response_s(90.0, 1.0, 100) / 3


def test_littles_law_holds_on_a_full_scenario(verdicts: dict[str, Verdict]) -> None:
    assert_agrees(verdicts["littles-law"], CASES["littles-law"][1])

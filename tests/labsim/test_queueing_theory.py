"""The closed forms in labsim.study.theory, against each other and against first principles."""

from __future__ import annotations

import math

import pytest

from labsim import ParameterError
from labsim.study import theory


def erlang_b_from_the_definition(servers: int, load: float) -> float:
    terms = [load**k / math.factorial(k) for k in range(servers + 1)]
    return terms[-1] / sum(terms)


@pytest.mark.parametrize(("servers", "load"), [(1, 0.5), (5, 3.0), (10, 5.0), (40, 35.0)])
def test_erlang_b_recursion_matches_the_definition(servers: int, load: float) -> None:
    assert theory.erlang_b(servers, load) == pytest.approx(
        erlang_b_from_the_definition(servers, load)
    )


def test_erlang_c_of_one_server_is_its_utilization() -> None:
    assert theory.erlang_c(1, 0.7) == pytest.approx(0.7)


@pytest.mark.parametrize(("servers", "rho"), [(2, 0.5), (4, 0.9), (16, 0.8)])
def test_erlang_c_matches_the_sum_formula(servers: int, rho: float) -> None:
    a = rho * servers
    head = sum(a**k / math.factorial(k) for k in range(servers))
    tail = a**servers / math.factorial(servers) / (1 - rho)
    assert theory.erlang_c(servers, a) == pytest.approx(tail / (head + tail))


def test_one_worker_mmc_is_mm1() -> None:
    assert theory.mmc_mean_wait_s(0.8, 1.0, 1) == pytest.approx(theory.mm1_mean_wait_s(0.8, 1.0))
    assert theory.mm1_mean_response_s(0.8, 1.0) == pytest.approx(5.0)


def test_mmck_with_no_waiting_room_is_erlang_b() -> None:
    assert theory.mmck_blocking_probability(3.0, 1.0, 4, 4) == pytest.approx(
        theory.erlang_b(4, 3.0)
    )


def test_mmck_with_a_huge_room_approaches_mmc() -> None:
    assert theory.mmck_blocking_probability(1.6, 1.0, 2, 400) < 1e-12
    assert theory.mmck_mean_response_s(1.6, 1.0, 2, 400) == pytest.approx(
        theory.mmc_mean_response_s(1.6, 1.0, 2)
    )


def test_mmck_has_a_steady_state_even_when_overloaded() -> None:
    blocked = theory.mmck_blocking_probability(3.0, 1.0, 1, 5)
    assert 0.6 < blocked < 1.0


def test_round_robin_to_one_replica_is_mm1() -> None:
    assert theory.round_robin_sigma(0.6, 1.0, 1) == pytest.approx(0.6)
    assert theory.round_robin_mean_response_s(0.6, 1.0, 1) == pytest.approx(2.5)


def test_round_robin_beats_random_routing_and_improves_with_replicas() -> None:
    random_s = theory.random_routing_mean_response_s(2.8, 1.0, 4)
    round_robin_s = theory.round_robin_mean_response_s(2.8, 1.0, 4)
    more_replicas_s = theory.round_robin_mean_response_s(5.6, 1.0, 8)
    assert random_s == pytest.approx(1 / (1 - 0.7))
    assert round_robin_s < random_s
    assert more_replicas_s < round_robin_s


def test_one_choice_is_random_routing_and_two_choices_are_exponentially_better() -> None:
    one = theory.power_of_d_mean_response_s(90.0, 1.0, 100, d=1)
    two = theory.power_of_d_mean_response_s(90.0, 1.0, 100, d=2)
    assert one == pytest.approx(theory.random_routing_mean_response_s(90.0, 1.0, 100))
    assert two < one / 3
    # The tail is doubly exponential: s_i = rho^(2^i - 1).
    assert theory.power_of_d_tail(0.9, 2, 3) == pytest.approx(0.9**7)


@pytest.mark.parametrize(
    "unstable",
    [
        lambda: theory.mm1_mean_response_s(1.0, 1.0),
        lambda: theory.mmc_mean_wait_s(4.5, 1.0, 4),
        lambda: theory.round_robin_mean_response_s(4.0, 1.0, 4),
        lambda: theory.power_of_d_mean_response_s(120.0, 1.0, 100),
        lambda: theory.mm1_mean_wait_s(-1.0, 1.0),
        lambda: theory.erlang_b(0, 1.0),
    ],
)
def test_systems_without_a_steady_state_are_rejected(unstable) -> None:
    with pytest.raises(ParameterError):
        unstable()

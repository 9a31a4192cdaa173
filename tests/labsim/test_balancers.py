"""Load-balancer policies, and which replicas take new work as their state changes."""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace

import pytest
import simpy
from scipy import stats

from labsim import ClusterParams, ParameterError
from labsim.model.balancers import make_balancer
from labsim.model.call import Session
from labsim.model.cluster import Cluster, Replica, ReplicaState
from labsim.model.metrics import Recorder


def replicas(*connections: int) -> list[Replica]:
    env = simpy.Environment()
    made = []
    for k, open_connections in enumerate(connections):
        replica = Replica(env, k, ClusterParams(workers_per_replica=1), version=1)
        replica.connections = open_connections
        made.append(replica)
    return made


def picks(policy: str, pool: list[Replica], n: int, seed: int = 1) -> Counter:
    balancer = make_balancer(policy, random.Random(seed))
    return Counter(balancer.route(pool).index for _ in range(n))


def test_round_robin_deals_requests_in_turn() -> None:
    balancer = make_balancer("round-robin", random.Random(1))
    pool = replicas(0, 0, 0)
    order = [balancer.route(pool).index for _ in range(6)]
    assert sorted(order[:3]) == [0, 1, 2]
    assert order[:3] == order[3:]


def test_random_choice_spreads_requests_uniformly() -> None:
    counts = picks("random", replicas(0, 0, 0, 0), 8_000)
    assert stats.chisquare([counts[k] for k in range(4)]).pvalue > 0.001


def test_least_connections_picks_the_emptiest_and_spreads_ties() -> None:
    assert set(picks("least-connections", replicas(3, 1, 2), 10)) == {1}
    assert set(picks("least-connections", replicas(1, 1, 5), 10)) == {0, 1}


def test_power_of_two_choices_never_picks_the_busiest_replica() -> None:
    counts = picks("power-of-two", replicas(0, 5, 10), 6_000)
    assert counts[2] == 0
    # The emptiest wins whenever it is one of the two asked: 2 pairs in 3.
    assert counts[0] / 6_000 == pytest.approx(2 / 3, abs=0.03)


def test_a_cookie_pins_a_call_until_its_replica_goes_down() -> None:
    pool = replicas(0, 0, 0)
    sticky = make_balancer("round-robin", random.Random(1), sticky=True)
    session = Session()
    call = SimpleNamespace(session=session)
    first = sticky.route(pool, call)
    assert all(sticky.route(pool, call) is first for _ in range(5))
    first.state = ReplicaState.DRAINING  # HAProxy keeps routing cookie holders to a draining server
    assert sticky.route([r for r in pool if r is not first], call) is first
    first.state = ReplicaState.DOWN
    moved = sticky.route([r for r in pool if r is not first], call)
    assert moved is not first
    assert session.cookie is moved
    # Another call of the same session follows the cookie.
    assert sticky.route(pool, SimpleNamespace(session=session)) is moved


def test_draining_and_down_replicas_take_no_new_calls() -> None:
    env = simpy.Environment()
    cluster = Cluster(
        env, ClusterParams(replicas=3), random.Random(1), Recorder(), (0.0, 10.0), sticky=False
    )
    cluster.set_state(cluster.replicas[0], ReplicaState.DRAINING)
    cluster.set_state(cluster.replicas[1], ReplicaState.DOWN)
    assert {cluster.route().index for _ in range(10)} == {2}
    cluster.set_state(cluster.replicas[1], ReplicaState.UP)
    assert {cluster.route().index for _ in range(10)} == {1, 2}
    cluster.set_state(cluster.replicas[1], ReplicaState.DOWN)
    cluster.set_state(cluster.replicas[2], ReplicaState.DOWN)
    assert cluster.route() is None


def test_an_unknown_policy_is_a_parameter_error() -> None:
    with pytest.raises(ParameterError):
        make_balancer("fastest", random.Random(1))
    with pytest.raises(ParameterError):
        ClusterParams(lb_policy="fastest")

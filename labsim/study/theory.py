"""Queueing theory the simulation is checked against.

Closed forms for the cases where theory has an answer: a single server
(M/M/1), c servers with a shared queue (M/M/c: Erlang C), c servers and no
queue (Erlang B), c servers and room for K (M/M/c/K), Little's law, and the
routing results for N replicas behind a load balancer: random routing makes
each replica an M/M/1, round-robin an E_N/M/1 (each replica sees every N-th
arrival), and the power of d choices follows Mitzenmacher's fixed point.

Rates are per second; `arrival_rate` is the total offered to the system,
`service_rate` that of one server. Unstable systems raise `ParameterError`.
"""

from __future__ import annotations

from scipy.optimize import brentq

from labsim.model.checks import ParameterError


def _check_rates(arrival_rate: float, service_rate: float) -> None:
    if not (arrival_rate > 0 and service_rate > 0):
        raise ParameterError(
            f"rates must be > 0 (arrival {arrival_rate!r}, service {service_rate!r})"
        )


def _check_servers(servers: int) -> None:
    if not (isinstance(servers, int) and servers >= 1):
        raise ParameterError(f"servers must be an integer >= 1, got {servers!r}")


def utilization(arrival_rate: float, service_rate: float, servers: int = 1) -> float:
    """rho = lambda / (c mu): the busy fraction of each server."""
    _check_rates(arrival_rate, service_rate)
    _check_servers(servers)
    return arrival_rate / (servers * service_rate)


def _stable_utilization(arrival_rate: float, service_rate: float, servers: int) -> float:
    rho = utilization(arrival_rate, service_rate, servers)
    if rho >= 1:
        raise ParameterError(
            f"no steady state: utilization rho = {rho:.3g} >= 1 "
            f"(arrival rate {arrival_rate:g}/s, {servers} x {service_rate:g}/s)"
        )
    return rho


def mm1_mean_response_s(arrival_rate: float, service_rate: float) -> float:
    """M/M/1 mean time in system: 1 / (mu - lambda)."""
    _stable_utilization(arrival_rate, service_rate, 1)
    return 1.0 / (service_rate - arrival_rate)


def mm1_mean_wait_s(arrival_rate: float, service_rate: float) -> float:
    """M/M/1 mean time in queue: rho / (mu - lambda)."""
    rho = _stable_utilization(arrival_rate, service_rate, 1)
    return rho / (service_rate - arrival_rate)


def erlang_b(servers: int, offered_load: float) -> float:
    """Erlang B: probability that an arrival finds all c servers busy and no queue.

    `offered_load` is a = lambda / mu in erlangs. Computed by the stable
    recursion B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)).
    """
    _check_servers(servers)
    if offered_load < 0:
        raise ParameterError(f"offered load must be >= 0, got {offered_load!r}")
    blocking = 1.0
    for k in range(1, servers + 1):
        blocking = offered_load * blocking / (k + offered_load * blocking)
    return blocking


def erlang_c(servers: int, offered_load: float) -> float:
    """Erlang C: probability that an arrival has to wait in an M/M/c queue."""
    _check_servers(servers)
    rho = offered_load / servers
    if not 0 <= rho < 1:
        raise ParameterError(f"no steady state: utilization rho = {rho:.3g} >= 1")
    blocking = erlang_b(servers, offered_load)
    return blocking / (1 - rho * (1 - blocking))


def mmc_mean_wait_s(arrival_rate: float, service_rate: float, servers: int) -> float:
    """M/M/c mean time in queue: C(c, a) / (c mu - lambda)."""
    _stable_utilization(arrival_rate, service_rate, servers)
    waits = erlang_c(servers, arrival_rate / service_rate)
    return waits / (servers * service_rate - arrival_rate)


def mmc_mean_response_s(arrival_rate: float, service_rate: float, servers: int) -> float:
    """M/M/c mean time in system: mean wait plus one mean service time."""
    return mmc_mean_wait_s(arrival_rate, service_rate, servers) + 1.0 / service_rate


def mmck_state_probabilities(
    arrival_rate: float, service_rate: float, servers: int, capacity: int
) -> list[float]:
    """M/M/c/K stationary probabilities p_0 .. p_K of k calls in the system (any load)."""
    _check_rates(arrival_rate, service_rate)
    _check_servers(servers)
    if not (isinstance(capacity, int) and capacity >= servers):
        raise ParameterError(f"capacity K must be an integer >= servers, got {capacity!r}")
    a = arrival_rate / service_rate
    weights = [1.0]
    for k in range(1, capacity + 1):
        weights.append(weights[-1] * a / min(k, servers))
    total = sum(weights)
    return [w / total for w in weights]


def mmck_blocking_probability(
    arrival_rate: float, service_rate: float, servers: int, capacity: int
) -> float:
    """M/M/c/K: probability that an arrival finds K calls in the system and is turned away."""
    return mmck_state_probabilities(arrival_rate, service_rate, servers, capacity)[-1]


def mmck_mean_response_s(
    arrival_rate: float, service_rate: float, servers: int, capacity: int
) -> float:
    """M/M/c/K mean time in system of admitted calls (Little's law on the admitted rate)."""
    probabilities = mmck_state_probabilities(arrival_rate, service_rate, servers, capacity)
    mean_in_system = sum(k * p for k, p in enumerate(probabilities))
    return mean_in_system / (arrival_rate * (1 - probabilities[-1]))


def littles_law_mean_number(arrival_rate: float, mean_time_s: float) -> float:
    """Little's law: L = lambda W."""
    return arrival_rate * mean_time_s


def random_routing_mean_response_s(
    arrival_rate: float, service_rate: float, replicas: int
) -> float:
    """N single-worker replicas, random routing: each is an M/M/1 with lambda / N."""
    _check_servers(replicas)
    return mm1_mean_response_s(arrival_rate / replicas, service_rate)


def round_robin_sigma(arrival_rate: float, service_rate: float, replicas: int) -> float:
    """The root sigma in (0, 1) of the E_N/M/1 queue a round-robin replica sees.

    Each replica receives every N-th of a Poisson(lambda) stream, so its
    inter-arrival time is Erlang with N phases of rate lambda, whose Laplace
    transform is (lambda / (lambda + s))^N; sigma solves the GI/M/1 equation
    sigma = A*(mu (1 - sigma)). sigma is also the probability that an arrival
    finds the replica busy.
    """
    _stable_utilization(arrival_rate / replicas, service_rate, 1)

    def gap(sigma: float) -> float:
        return (arrival_rate / (arrival_rate + service_rate * (1 - sigma))) ** replicas - sigma

    return brentq(gap, 1e-12, 1 - 1e-12, xtol=1e-14)


def round_robin_mean_response_s(arrival_rate: float, service_rate: float, replicas: int) -> float:
    """N single-worker replicas, round-robin: E_N/M/1 mean time in system 1 / (mu (1 - sigma))."""
    sigma = round_robin_sigma(arrival_rate, service_rate, replicas)
    return 1.0 / (service_rate * (1 - sigma))


def round_robin_mean_wait_s(arrival_rate: float, service_rate: float, replicas: int) -> float:
    """N single-worker replicas, round-robin: E_N/M/1 mean wait sigma / (mu (1 - sigma))."""
    sigma = round_robin_sigma(arrival_rate, service_rate, replicas)
    return sigma / (service_rate * (1 - sigma))


def power_of_d_tail(rho: float, d: int, jobs: int) -> float:
    """Mitzenmacher's fixed point: the fraction of replicas with at least `jobs` calls.

    In the limit of many replicas with d choices, s_i = rho^((d^i - 1) / (d - 1)):
    doubly exponential in i for d >= 2, instead of the M/M/1's rho^i.
    """
    if not 0 <= rho < 1:
        raise ParameterError(f"no steady state: utilization rho = {rho:.3g} >= 1")
    if d == 1:
        return rho**jobs
    return rho ** ((d**jobs - 1) / (d - 1))


def power_of_d_mean_response_s(
    arrival_rate: float, service_rate: float, replicas: int, d: int = 2
) -> float:
    """Mean time in system with power-of-d routing to N single-worker replicas (N large).

    The mean number per replica is sum_{i>=1} s_i; Little's law with each
    replica's arrival rate lambda / N gives the time.
    """
    if not (isinstance(d, int) and d >= 1):
        raise ParameterError(f"d must be an integer >= 1, got {d!r}")
    rho = _stable_utilization(arrival_rate, service_rate, replicas)
    mean_number = 0.0
    jobs = 1
    while True:
        tail = power_of_d_tail(rho, d, jobs)
        mean_number += tail
        if tail < 1e-15 or jobs > 10_000:
            break
        jobs += 1
    return mean_number / (arrival_rate / replicas)

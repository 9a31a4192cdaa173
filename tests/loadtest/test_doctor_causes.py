"""The doctor tells the causes of a refused requestState apart where it can, and bounds how
long a state lives, without a server: replicas stood in for by a stub that seals and opens
states as the official Python SDK does (an expiry read on the opening replica's clock, a
state minted in its future refused, every refusal worded the same), each replica with a
clock of its own.

A state its own sealer refuses too has expired; one its sealer still opens, refused by a
replica whose `Date` is far from the sealer's, met a clock; neither seen, the cause is
not told."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from email.utils import formatdate

import pytest

from loadtest.doctor.deployment import Deployment, Round
from loadtest.doctor.settings import Examination
from loadtest.doctor.state import FIXES, across_replicas, lifetime, probe_ages_s
from loadtest.target import Auth, Target, TargetTool
from server.client import Exchange, McpError
from server.protocol.versions import MODERN_VERSION

A, B = "http://a.example/mcp", "http://b.example/mcp"
#: How far into the future a state's minting time may lie (the SDK's allowance).
FUTURE_SKEW_S = 1.0
_serial = itertools.count()


@dataclass
class StubReplicas(Deployment):
    """Two replicas that share their key and name: each seals a state with its own clock's
    time and opens one while its clock is before the expiry (`ttl_s` after sealing) and
    not before the minting; `refuses_others` makes a replica refuse every state sealed
    elsewhere, for no reason a client can see."""

    ttl_s: float = 600.0
    clock_offset_s: dict[str, float] = field(default_factory=dict)
    refuses_others: bool = False
    sealed: dict[str, tuple[str, float]] = field(default_factory=dict)

    def now(self, url: str) -> float:
        return time.time() + self.clock_offset_s.get(url, 0.0)

    def answered(self, url: str, **outcome: object) -> Round:
        exchange = Exchange("tools/call", {"name": "ask", "arguments": {}}, {})
        date = {"date": formatdate(self.now(url), usegmt=True)}
        return Round(url, exchange, 200, headers=date, **outcome)  # type: ignore[arg-type]

    def start_sealed(self, url: str, token: str | None = None, attempts: int = 1) -> Round:
        state = f"opaque-state-{next(_serial)}"  # shows no key id
        self.sealed[state] = (url, self.now(url))
        question = {"q": {"method": "elicitation/create", "params": {"message": "?"}}}
        return self.answered(url, asked=True, request_state=state, input_requests=question)

    def retry(self, url: str, first: Round, token: str | None = None) -> Round:
        assert first.request_state is not None
        sealer, minted = self.sealed[first.request_state]
        now = self.now(url)
        opens = minted <= now + FUTURE_SKEW_S and now < minted + self.ttl_s
        if opens and not (self.refuses_others and url != sealer):
            return self.answered(url, completed=True)
        error = McpError(-32602, "Invalid or expired requestState", None, 400)
        return Round(url, first.exchange, 400, error=error, headers=self.answered(url).headers)


def replicas(think_time_s: float = 0.2, ttl_probe_s: float = 0.0, **stub: object) -> StubReplicas:
    settings = Examination(think_time_s=think_time_s, ttl_probe_s=ttl_probe_s)
    deployment = StubReplicas([A, B], None, Auth(), settings, **stub)  # type: ignore[arg-type]
    deployment.targets = {
        url: Target(url, Auth(), (MODERN_VERSION,), server_name="one-name") for url in (A, B)
    }
    deployment.tool = TargetTool("ask", "asks", {"type": "object"})
    return deployment


def test_replicas_that_share_key_name_and_time_hold_the_state() -> None:
    finding = across_replicas(replicas())
    assert finding.passed and "2 ordered pairs" in finding.evidence


def test_a_state_its_own_sealer_refuses_too_has_expired() -> None:
    finding = across_replicas(replicas(ttl_s=0.0))
    assert not finding.passed
    assert "cause: expired" in finding.evidence
    assert "(expired); " in finding.evidence and finding.evidence.endswith("(expired)")
    assert finding.fix == FIXES["expired"] and "TTL" in finding.fix


def test_a_replica_whose_clock_is_far_ahead_refuses_for_the_clock() -> None:
    finding = across_replicas(replicas(ttl_s=60.0, clock_offset_s={B: 120.0}))
    assert not finding.passed
    assert "2 of 2 ordered pairs" in finding.evidence
    assert f"{A} -> {B} (clock)" in finding.evidence and f"{B} -> {A} (clock)" in finding.evidence
    assert finding.fix == FIXES["clock"] and "NTP" in finding.fix


def test_a_clock_within_the_allowance_is_not_blamed() -> None:
    # 3 s apart: under CLOCK_SKEW_S, so a refusal is not put on the clock
    finding = across_replicas(replicas(clock_offset_s={B: 3.0}, refuses_others=True))
    assert not finding.passed
    assert "cause: unknown" in finding.evidence and "clock" not in finding.evidence.split(";")[1]


def test_a_refusal_with_nothing_to_see_is_not_given_a_cause() -> None:
    finding = across_replicas(replicas(refuses_others=True))
    assert not finding.passed
    assert "cause: unknown" in finding.evidence
    assert finding.fix == FIXES["unknown"]


def test_the_ages_tried_run_from_an_eighth_of_the_think_time_doubling_to_the_probe() -> None:
    assert probe_ages_s(2.0, 0.0) == [0.25, 0.5, 1.0, 2.0]
    assert probe_ages_s(2.0, 10.0) == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 10.0]
    assert probe_ages_s(2.0, 8.0) == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]


def test_a_state_that_dies_before_the_think_time_fails_with_its_lifetime() -> None:
    # ages 0.05, 0.1, 0.2, 0.4 s: a state of 0.15 s opens at 0.1 and not at 0.2
    finding = lifetime(replicas(think_time_s=0.4, ttl_s=0.15))
    assert not finding.passed, finding.evidence
    assert finding.fix == FIXES["expired"]
    assert "shorter than the think time" in finding.evidence
    lives_s, dies_s = finding.figures["ttl_at_least_s"], finding.figures["ttl_at_most_s"]
    assert lives_s is not None and dies_s is not None
    assert 0.1 <= lives_s < 0.15 <= dies_s < 0.3
    assert f"between {lives_s:.3g} and {dies_s:.3g} s" in finding.evidence


def test_a_state_that_outlives_every_age_tried_is_said_to_live_at_least_the_oldest() -> None:
    finding = lifetime(replicas(think_time_s=0.1, ttl_probe_s=0.4))
    assert finding.passed, finding.evidence
    assert finding.figures["ttl_at_most_s"] is None
    assert finding.figures["ttl_at_least_s"] == pytest.approx(0.4, abs=0.1)
    assert "its lifetime (TTL): at least 0.4" in finding.evidence


def test_a_probe_past_the_think_time_bounds_a_lifetime_longer_than_it() -> None:
    # ages up to 0.1 (the think time), then 0.2, 0.4, 0.8: a state of 0.3 s
    finding = lifetime(replicas(think_time_s=0.1, ttl_probe_s=0.8, ttl_s=0.3))
    assert finding.passed, finding.evidence
    lives_s, dies_s = finding.figures["ttl_at_least_s"], finding.figures["ttl_at_most_s"]
    assert lives_s is not None and dies_s is not None
    assert 0.2 <= lives_s < 0.3 <= dies_s
    assert "shorter than the think time" not in finding.evidence

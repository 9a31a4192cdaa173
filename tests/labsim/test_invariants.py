"""Properties that hold for any deployment, checked over randomly drawn parameters."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labsim import ARCHITECTURES, LoadSpike, ReplicaCrash, RollingUpgrade, SimParams, simulate
from labsim.model.deployment import BALANCER_POLICIES, SHED_POLICIES
from tests.labsim.runs import assert_littles_law

deployments = st.builds(
    lambda rate, replicas, workers, policy, shed, think, never, fault: SimParams(
        horizon_s=300.0, warmup_s=60.0, faults=fault
    ).with_overrides(
        arrival_rate_per_s=rate,
        replicas=replicas,
        workers_per_replica=workers,
        lb_policy=policy,
        shed_policy=shed,
        think_scale=think,
        never_answer_share=never,
        answer_timeout_s=60.0,
    ),
    rate=st.floats(0.5, 15.0),
    replicas=st.integers(1, 5),
    workers=st.integers(1, 3),
    policy=st.sampled_from(BALANCER_POLICIES),
    shed=st.sampled_from(SHED_POLICIES),
    think=st.sampled_from([0.0, 0.3, 1.0]),
    never=st.sampled_from([0.0, 0.05, 0.5]),
    fault=st.sampled_from(
        [
            (),
            (ReplicaCrash(at_s=120.0, restart_s=20.0),),
            (RollingUpgrade(at_s=100.0, drain_timeout_s=10.0, restart_s=5.0),),
            (LoadSpike(at_s=100.0, duration_s=30.0, factor=10.0),),
        ]
    ),
)


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(params=deployments, seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_any_deployment_accounts_for_every_call(params: SimParams, seed: int) -> None:
    for architecture in ARCHITECTURES:
        result = simulate(params, architecture, seed)
        calls = result.calls
        summary = result.summary
        assert len(calls) == calls["call"].nunique() == calls["call"].max() + 1
        measured = result.measured_calls()
        outcomes = sum(summary[k] for k in ("completed", "failed", "lost", "abandoned"))
        assert outcomes == len(measured) == summary["calls"]
        assert (calls["end_s"] >= calls["arrival_s"]).all()
        assert (calls["server_latency_s"] >= -1e-9).all()
        assert (calls["wasted_cpu_s"] <= calls["cpu_s"] + 1e-9).all()
        assert 0 <= summary["utilization"] <= 1.0 + 1e-9
        if architecture == "mrtr":
            assert summary["peak_held_bytes"] == 0
            assert summary["re_prompts"] == 0
            assert summary["state_losses"] == 0
        # Little's law over a finite window needs few calls straddling its edges.
        straddling = sum(
            ((calls["arrival_s"] < edge) & (calls["end_s"] > edge)).sum()
            for edge in (params.warmup_s, params.horizon_s)
        )
        if len(measured) > 200 and straddling < 0.05 * len(measured):
            assert_littles_law(result, tolerance=0.25)

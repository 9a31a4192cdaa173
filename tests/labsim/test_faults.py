"""Acceptance: what a crash, a store outage, a rolling upgrade, an overload and an idle
timeout do to each architecture, pinned with numbers. Every run is checked against
Little's law by `tests.labsim.runs.run`."""

from __future__ import annotations

import pandas as pd
import pytest

from labsim import ARCHITECTURES, ReplicaCrash, ServiceTime
from tests.labsim.runs import run

LEGACY = ("sse-store", "sticky")

# Busier replicas (longer tool CPU) and a crash of each replica in turn, so that
# MRTR requests are certainly being worked on when a replica dies; update_work_item asks
# in two rounds, so a call cut while waiting for its second answer loses the first.
EVERY_REPLICA_CRASHES = {
    "tools": ("crunch", "get_weather", "update_work_item"),
    "round_cpu": ServiceTime(mean_s=0.2),
    "faults": tuple(ReplicaCrash(at_s=450.0 + 50 * k, replica=k) for k in range(4)),
}


@pytest.mark.slow
def test_a_crash_loses_held_calls_under_sticky_and_sse_store_but_none_under_mrtr() -> None:
    for architecture in LEGACY:
        summary = run("crash", architecture, **EVERY_REPLICA_CRASHES).summary
        assert summary["state_losses"] > 20
        assert summary["re_prompts"] > 0
        assert summary["wasted_cpu_s"] > 0
    mrtr = run("crash", "mrtr", **EVERY_REPLICA_CRASHES)
    cut = mrtr.events[mrtr.events["kind"] == "cut"]
    assert len(cut) == 4
    # Requests were being worked on when replicas died; the client retried those rounds.
    assert mrtr.calls["retries"].sum() > 0
    assert mrtr.summary["state_losses"] == 0
    assert mrtr.summary["lost"] == 0
    assert mrtr.calls["re_prompts"].sum() == 0


def test_the_default_crash_scenario_cuts_only_the_legacy_streams() -> None:
    cut = {a: run("crash", a).summary["state_losses"] for a in ARCHITECTURES}
    assert cut["mrtr"] == 0
    assert cut["sse-store"] > 0 and cut["sticky"] > 0


@pytest.mark.slow
def test_a_store_outage_stops_sse_store_elicitation_and_nothing_else() -> None:
    sse = run("store-outage", "sse-store").calls
    failed = sse[sse["outcome"] == "failed"]
    assert len(failed) > 50
    assert (failed["tool"] > 0).all(), "a call that asks nothing never touches the store"
    assert failed["end_s"].between(450.0, 510.0 + 1.0).all(), "failures only during the outage"
    assert (sse.loc[sse["tool"] == 0, "outcome"] == "completed").all()
    for architecture in ("sticky", "mrtr"):
        # Without a store, the outage changes nothing at all: call for call.
        pd.testing.assert_frame_equal(
            run("store-outage", architecture).calls, run("steady", architecture).calls
        )


def test_a_short_drain_cuts_legacy_calls_while_mrtr_asks_only_what_changed() -> None:
    for architecture in LEGACY:
        result = run("rolling-upgrade", architecture)
        thinking = result.calls.loc[result.calls["tool"] > 0, "think_s"]
        assert result.params.faults[0].drain_timeout_s < thinking.quantile(0.9)
        summary = result.summary
        assert summary["state_losses"] > 0
        assert summary["re_prompts"] > 0
    mrtr = run("rolling-upgrade", "mrtr")
    calls = mrtr.calls
    assert calls["re_prompts"].sum() == 0
    assert calls["restarts"].sum() == 0
    asked_anew = calls[calls["new_questions"] > 0]
    assert len(asked_anew) > 0
    # Only the tool whose question changed asks anew, once, on top of its two questions.
    assert (asked_anew["tool"] == 2).all()
    assert (asked_anew["new_questions"] == 1).all()
    assert (asked_anew.loc[asked_anew["outcome"] == "completed", "answers"] == 3).all()
    # ... and MRTR replicas drain at once, so the upgrade is over sooner.
    assert (
        mrtr.summary["upgrade_duration_s"]
        < run("rolling-upgrade", "sticky").summary["upgrade_duration_s"]
    )


def test_a_drain_longer_than_any_hold_loses_nothing() -> None:
    for architecture in LEGACY:
        summary = run("rolling-upgrade", architecture, drain_timeout_s=400.0).summary
        assert summary["state_losses"] == 0
        assert summary["re_prompts"] == 0


@pytest.mark.slow
def test_mrtr_offload_preserves_work_that_503_rejection_throws_away() -> None:
    offload = run("overload", "mrtr", shed_policy="mrtr-offload").summary
    reject = run("overload", "mrtr", shed_policy="reject-503").summary
    assert offload["offloads"] > 0
    assert offload["wasted_cpu_s"] < 0.1 * reject["wasted_cpu_s"]
    assert reject["wasted_cpu_s"] > 10
    assert offload["goodput_per_s"] > reject["goodput_per_s"]
    assert offload["completed"] > reject["completed"]


@pytest.mark.slow
def test_the_legacy_protocol_cannot_offload_so_it_rejects() -> None:
    offload = run("overload", "sticky", shed_policy="mrtr-offload").calls
    reject = run("overload", "sticky", shed_policy="reject-503").calls
    pd.testing.assert_frame_equal(offload, reject)
    assert offload["offloads"].sum() == 0


def test_without_shedding_the_queue_grows_during_a_spike() -> None:
    steady = run("steady", "mrtr").summary
    spike = run("overload", "mrtr", shed_policy="none").summary
    assert spike["p95_latency_s"] > 10 * steady["p95_latency_s"]
    assert spike["wasted_cpu_s"] == 0


@pytest.mark.slow
def test_without_keep_alives_the_idle_timeout_cuts_users_who_think_too_long() -> None:
    for architecture in LEGACY:
        result = run("idle-timeout", architecture)
        timeout_s = result.params.cluster.lb_idle_timeout_s
        calls = result.calls
        restarted = calls[calls["restarts"] > 0]
        assert len(restarted) > 50
        assert (restarted["think_s"] >= timeout_s).all()
        assert result.summary["re_prompts"] > 0
        # Keep-alives under the idle timeout avoid every cut.
        assert run("idle-timeout", architecture, sse_keepalive_s=15.0).summary["state_losses"] == 0
    pd.testing.assert_frame_equal(run("idle-timeout", "mrtr").calls, run("steady", "mrtr").calls)


@pytest.mark.parametrize("architecture", list(ARCHITECTURES))
def test_every_call_ends_exactly_once_in_every_scenario(architecture: str) -> None:
    for scenario in ("steady", "crash", "store-outage", "rolling-upgrade", "idle-timeout"):
        result = run(scenario, architecture)
        calls = result.calls
        assert calls["call"].is_unique
        assert len(calls) == calls["call"].max() + 1
        assert calls["outcome"].notna().all()
        assert (calls["end_s"] >= calls["arrival_s"]).all()
        assert (calls["server_latency_s"] >= -1e-9).all()
        assert (calls["wasted_cpu_s"] <= calls["cpu_s"] + 1e-9).all()

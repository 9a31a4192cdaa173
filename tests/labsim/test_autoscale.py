"""The `autoscale` scenario: a fleet that follows the load, billed for the replicas it ran,
with sticky sessions that leave new replicas idle and legacy scale-ins that cut held calls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labsim import ParameterError, ReplicaCrash
from labsim.model.autoscale import Autoscaler, diurnal_profile
from labsim.model.cost import replica_hour_usd
from labsim.model.workload import assign_sessions
from labsim.study import scenarios
from tests.labsim.runs import run


def billed_hours(events: pd.DataFrame, initial: int, t0: float, t1: float) -> float:
    """Replica-hours in [t0, t1] from the state events alone: billed from launch to stop."""
    since = dict.fromkeys(range(initial), 0.0)
    total_s = 0.0
    for row in events.sort_values("time_s", kind="stable").itertuples():
        if row.kind == "starting":
            since[row.replica] = row.time_s
        elif row.kind == "down" and row.replica in since:
            start = since.pop(row.replica)
            total_s += max(0.0, min(row.time_s, t1) - max(start, t0))
    total_s += sum(max(0.0, t1 - max(start, t0)) for start in since.values())
    return total_s / 3600


@pytest.mark.parametrize("architecture", ["mrtr", "sticky", "sse-store"])
@pytest.mark.slow
def test_the_bill_is_the_replica_hours_the_store_and_the_egress(architecture: str) -> None:
    result = run("autoscale", architecture)
    params, summary = result.params, result.summary
    hours = billed_hours(result.events, params.cluster.replicas, params.warmup_s, params.horizon_s)
    assert summary["replica_hours"] == pytest.approx(hours, rel=1e-9)
    # The fleet grew: more than the starting replicas for the whole window.
    window_h = (params.horizon_s - params.warmup_s) / 3600
    assert hours > params.cluster.replicas * window_h
    cost = params.cost
    replicas_usd = hours * replica_hour_usd(params)
    store_usd = summary["store_hours"] * params.store.billed_gb * cost.store_gb_hour_usd
    store_usd += (
        summary["store_ops"] * params.store.ecpus_per_op * cost.store_usd_per_million_ecpu / 1e6
    )
    egress_usd = summary["bytes_out"] / 1e9 * cost.egress_usd_per_gb
    assert summary["cost_replicas_usd"] == pytest.approx(replicas_usd)
    assert summary["cost_store_usd"] == pytest.approx(store_usd)
    assert summary["cost_egress_usd"] == pytest.approx(egress_usd)
    assert summary["cost_total_usd"] == pytest.approx(replicas_usd + store_usd + egress_usd)
    assert (summary["store_hours"] > 0) == (architecture == "sse-store")


@pytest.mark.slow
def test_the_fleet_scales_out_with_the_load_and_back_in_after_it() -> None:
    result = run("autoscale", "mrtr")
    events = result.events
    outs = events[events["kind"] == "scale-out"]["time_s"]
    ins = events[events["kind"] == "scale-in"]["time_s"]
    assert len(outs) >= 1 and len(ins) >= 1
    assert 600 <= outs.min() < 700  # within a period or two of the load tripling
    assert ins.min() > 1500  # after the load falls back
    timeline = result.timeline
    peak = timeline.loc[timeline["time_s"].between(900, 1500), "replicas_up"].max()
    assert peak > result.params.cluster.replicas
    assert timeline["replicas_billed"].iloc[-1] == result.params.cluster.replicas


@pytest.mark.slow
def test_scale_in_is_immediate_under_mrtr_and_cuts_held_calls_under_legacy() -> None:
    mrtr = run("autoscale", "mrtr")
    assert (mrtr.events["kind"] != "cut").all()
    assert mrtr.summary["state_losses"] == 0
    # MRTR replicas stop as soon as their requests in progress end.
    stops = mrtr.events[mrtr.events["detail"] == "stopped: scale-in"]["time_s"].to_numpy()
    drains = mrtr.events[mrtr.events["detail"] == "scale-in"]["time_s"].to_numpy()
    assert len(stops) == len(drains) > 0
    assert (stops - drains < 1.0).all()
    for legacy in ("sticky", "sse-store"):
        result = run("autoscale", legacy)
        cuts = result.events[result.events["kind"] == "cut"]
        assert len(cuts) > 0
        assert result.summary["state_losses"] > 0


@pytest.mark.slow
def test_after_a_scale_out_new_replicas_get_only_new_sessions_behind_a_sticky_cookie() -> None:
    def new_replicas_share(architecture: str) -> float:
        result = run("autoscale", architecture)
        samples = result.replicas
        initial = result.params.cluster.replicas
        first_minutes = samples[samples["time_s"].between(660, 780) & (samples["state"] == "up")]
        per_time = first_minutes.groupby("time_s").apply(
            lambda s: (
                s.loc[s["replica"] >= initial, "cpu_share"].sum()
                / max(1, (s["replica"] >= initial).sum())
                * len(s)
            )
        )
        return float(per_time.mean())

    # 1.0 would be a fair share per new replica; MRTR is near it, sticky far below.
    assert new_replicas_share("mrtr") > 0.8
    assert new_replicas_share("sticky") < 0.6


def test_sessions_group_calls_and_stay_within_their_window() -> None:
    rng = np.random.default_rng(3)
    arrivals = np.sort(rng.uniform(0, 3600, 20_000))
    session = assign_sessions(arrivals, 5.0, 600.0, rng)
    counts = np.bincount(session)
    assert counts.mean() == pytest.approx(5.0, rel=0.1)
    frame = pd.DataFrame({"t": arrivals, "session": session})
    spans = frame.groupby("session")["t"].agg(lambda t: t.max() - t.min())
    assert spans.max() <= 600.0 * 1.5  # a session's later calls come while it is open
    assert (assign_sessions(arrivals, 1.0, 600.0, rng) == np.arange(len(arrivals))).all()


def test_a_diurnal_profile_rises_and_falls_and_bad_scalers_are_rejected() -> None:
    profile = diurnal_profile(86_400.0, 0.2, 1.0, steps=24)
    multipliers = [m for _, m in profile]
    assert multipliers[0] < 0.3 and max(multipliers) > 0.95 and multipliers[-1] < 0.3
    assert scenarios.build("autoscale", rate_profile=profile).workload.rate_profile == profile
    with pytest.raises(ParameterError):
        Autoscaler(metric="memory")
    with pytest.raises(ParameterError):
        Autoscaler(min_replicas=5, max_replicas=2)
    with pytest.raises(ParameterError):
        scenarios.build("autoscale", replicas=50)


def test_the_autoscaler_has_a_slot_of_its_own_and_takes_overrides_by_field() -> None:
    params = scenarios.build("autoscale", target=0.6, scale_in_cooldown_s=120.0)
    assert params.faults == ()
    assert params.autoscaler == Autoscaler(target=0.6, scale_in_cooldown_s=120.0)
    # A field both a fault and the scaler have goes to each.
    both = params.with_overrides(faults=(ReplicaCrash(),)).with_overrides(at_s=60.0)
    assert both.faults == (ReplicaCrash(at_s=60.0),)
    assert both.autoscaler is not None and both.autoscaler.at_s == 60.0
    with pytest.raises(ParameterError, match="unknown parameter 'target'"):
        scenarios.build("steady", target=0.6)


@pytest.mark.slow
def test_scaling_on_requests_in_flight_counts_held_streams_as_load() -> None:
    # A held SSE stream is a request in flight for the whole think time: the sticky fleet
    # grows for users who are thinking, MRTR's only for work.
    in_flight = Autoscaler(metric="in-flight", target=20.0)
    sticky = run("autoscale", "sticky", autoscaler=in_flight).summary
    mrtr = run("autoscale", "mrtr", autoscaler=in_flight).summary
    assert sticky["replica_hours"] > 3 * mrtr["replica_hours"]
    assert sticky["fleet_utilization"] < mrtr["fleet_utilization"] / 3

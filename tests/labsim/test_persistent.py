"""Persistent tools in the simulation: tasks in the store, takeovers, outages, TTL, the bill."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib import pyplot as plt

from labsim import ARCHITECTURES, TaskParams
from labsim.model.checks import ParameterError
from labsim.model.demand import ClientParams
from labsim.study import plots, scenarios
from labsim.study.persistent_sweep import advantage, share_sweep
from tests.labsim.runs import run


def body_bytes(message: dict | None) -> int:
    """A message's size as compact JSON, as it goes on the wire."""
    return len(json.dumps(message, separators=(",", ":")).encode()) if message else 0


ROOT = Path(__file__).resolve().parents[2]
OUTAGE_AT_S, OUTAGE_END_S = 450.0, 510.0  # the persistent-store-outage scenario's outage


def test_mrtr_pays_for_a_store_only_for_its_persistent_share() -> None:
    steady = run("steady", "mrtr").summary
    persistent = run("persistent", "mrtr").summary
    assert steady["store_ops"] == 0
    assert steady["tasks_started"] == 0
    assert steady["cost_store_usd"] == 0
    assert persistent["tasks_started"] > 0
    assert persistent["store_ops"] > 0
    assert persistent["store_ops"] == persistent["task_store_ops"]
    assert persistent["cost_store_usd"] > 0
    assert 0 < persistent["store_share_of_bill"] < 1


def test_without_persistent_tools_the_other_calls_are_unchanged() -> None:
    steady = run("steady", "sticky")
    none = run("persistent", "sticky", persistent_share=0.0)
    assert none.tasks.empty
    columns = ["call", "tool", "arrival_s", "end_s", "outcome", "cpu_s"]
    assert steady.calls[columns].equals(none.calls[columns])


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_every_architecture_runs_the_same_tasks_to_their_end(architecture: str) -> None:
    result = run("persistent", architecture)
    tasks = result.tasks[result.tasks["measured"]]
    calls = result.measured_calls()
    assert len(tasks) / len(calls) == pytest.approx(scenarios.PERSISTENT_SHARE, abs=0.03)
    assert set(tasks["call"]) == set(run("persistent", "mrtr").tasks.query("measured")["call"])
    summary = result.summary
    assert summary["tasks_started"] == summary["tasks_completed"] + summary["tasks_abandoned"]
    assert summary["tasks_taken_over"] == 0
    done = calls.set_index("call").loc[tasks.loc[tasks["outcome"] == "completed", "call"]]
    # A completed task did its work and its client noticed within a poll interval.
    work_s = result.params.tasks.work_s
    assert (done["outcome"] == "completed").all()
    assert (done["server_latency_s"] >= work_s).all()
    assert summary["task_polls"] >= len(done) * work_s / result.params.tasks.poll_interval_s


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.slow
def test_a_crash_hands_its_tasks_to_another_replica(architecture: str) -> None:
    result = run("persistent-crash", architecture)
    summary = result.summary
    assert summary["tasks_taken_over"] > 0
    assert summary["tasks_lost"] == summary["tasks_expired"] == 0
    assert summary["tasks_started"] == summary["tasks_completed"] + summary["tasks_abandoned"]
    # The work since the last checkpoint is done again, never more than one step of it.
    params = result.params.tasks
    taken = result.tasks[result.tasks["taken_over"] > 0]
    assert (taken["wasted_work_s"] > 0).all()
    assert (taken["wasted_work_s"] <= taken["taken_over"] * params.work_s / params.steps).all()


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.slow
def test_a_store_outage_loses_no_acknowledged_task_and_never_hangs(architecture: str) -> None:
    result = run("persistent-store-outage", architecture)
    tasks, summary = result.tasks, result.summary
    acknowledged_before = tasks[tasks["created_s"] < OUTAGE_AT_S]
    assert acknowledged_before["outcome"].isin(["completed", "abandoned"]).all()
    assert summary["tasks_lost"] == 0
    # Callers during the outage saw errors: creations refused, polls and answers failed.
    assert summary["task_store_errors"] > 0
    refused = tasks[tasks["outcome"] == "rejected"]
    assert len(refused) > 0
    assert refused["created_s"].isna().all()
    assert (refused["arrival_s"] < OUTAGE_END_S).all()
    # Each refusal came after at most the store timeout per try and the client's backoff.
    client, timeout_s = ClientParams(), result.params.tasks.store_timeout_s
    tries = client.max_retries + 1
    bound_s = tries * (timeout_s + 1.0) + 1.5 * client.retry_backoff_s * (2**tries - 1)
    assert (refused["end_s"] - refused["arrival_s"] <= bound_s).all()
    # Runs whose checkpoint could not be written were taken over once the store came back.
    assert summary["tasks_taken_over"] > 0
    assert tasks["end_s"].notna().all()


def test_a_store_that_keeps_nothing_loses_the_tasks_it_held() -> None:
    result = run("persistent-store-outage", "mrtr", store_keeps_tasks=False)
    tasks = result.tasks
    held = tasks[(tasks["created_s"] < OUTAGE_AT_S) & (tasks["end_s"] > OUTAGE_AT_S)]
    lost = tasks[tasks["outcome"] == "lost"]
    assert len(lost) > 0
    assert set(lost["call"]) <= set(held["call"])
    # The ones not lost were abandoned by their users: nobody came back to find them gone.
    assert held["outcome"].isin(["lost", "abandoned"]).all()
    assert (tasks.loc[tasks["created_s"] > OUTAGE_END_S, "outcome"] != "lost").all()


def test_a_task_that_outlives_its_ttl_expires() -> None:
    ttl_s = 90.0
    result = run("persistent", "mrtr", ttl_s=ttl_s)
    tasks = result.tasks
    expired = tasks[tasks["outcome"] == "expired"]
    assert len(expired) > 0
    assert (expired["end_s"] >= expired["created_s"] + ttl_s).all()
    completed = tasks[tasks["outcome"] == "completed"]
    assert (completed["end_s"] < completed["created_s"] + ttl_s).all()
    # The store holds each record for its TTL at most.
    rate_per_s = len(tasks) / result.params.horizon_s
    stored = result.summary["task_stored_bytes_mean"]
    assert 0 < stored <= 1.2 * rate_per_s * ttl_s * result.params.tasks.record_bytes


@pytest.mark.slow
def test_the_share_sweep_shows_mrtr_losing_its_store_advantage() -> None:
    frame = share_sweep((0.0, 0.5), replications=2, processes=1, horizon_s=400.0, warmup_s=100.0)
    cost_saved = advantage(frame)
    memory_saved = advantage(frame, "mean_held_bytes")
    assert cost_saved.loc[0.0, "sse-store"] > 0
    assert cost_saved.loc[0.5, "sse-store"] < cost_saved.loc[0.0, "sse-store"] / 2
    assert memory_saved.loc[0.0, "sticky"] > memory_saved.loc[0.5, "sticky"] > 0
    store = frame[(frame["metric"] == "cost_store_usd") & (frame["architecture"] == "mrtr")]
    assert store.set_index("persistent_share").loc[0.0, "mean"] == 0
    assert store.set_index("persistent_share").loc[0.5, "mean"] > 0
    figure = plots.share_sweep(frame)
    try:
        assert len(figure.axes) == 3
        for ax in figure.axes:
            assert "(%)" in ax.get_xlabel()
            assert ax.get_ylabel()
        labels = [t.get_text() for t in figure.legends[0].get_texts()]
        assert labels == ["SSE + shared store", "sticky load balancer", "MRTR"]
    finally:
        plt.close(figure)


@pytest.mark.slow
def test_compare_persistent_reports_tasks_per_architecture(tmp_path: Path) -> None:
    out = tmp_path / "persistent.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "labsim", "compare", "--scenario", "persistent",
            "--replications", "1", "--json", str(out),
            "--set", "horizon_s=300", "--set", "warmup_s=100",
        ],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "tasks started" in done.stdout
    assert "store share of the bill" in done.stdout
    metrics = {
        (r["architecture"], r["metric"]): r["mean"] for r in json.loads(out.read_text())["results"]
    }
    for architecture in ARCHITECTURES:
        assert metrics[(architecture, "tasks_started")] > 0
        assert metrics[(architecture, "task_store_ops")] > 0
    assert metrics[("mrtr", "store_ops")] > 0


@pytest.mark.parametrize(
    ("field", "value"),
    [("persistent_share", 1.5), ("lease_s", 0), ("steps", 0), ("poll_interval_s", -1)],
)
def test_bad_task_parameters_are_refused(field: str, value: float) -> None:
    with pytest.raises(ParameterError, match=field):
        TaskParams(**{field: value})


def test_task_defaults_follow_the_server() -> None:
    from server.config import ServerConfig
    from server.tools import demo

    with pytest.warns(UserWarning):
        config = ServerConfig()
    params = TaskParams()
    assert params.lease_s == config.task_lease_s
    assert params.poll_interval_s == config.task_poll_interval_ms / 1000
    assert params.ttl_s == config.task_default_ttl_ms / 1000
    assert params.store_timeout_s == config.task_store_timeout_s
    assert params.steps == len(demo.PROVISION_STEPS)
    assert params.work_s == demo.PROVISION_MAX_S


def test_task_sizes_are_the_servers() -> None:
    """A provision_vm task on the in-process server: its stored record and its polls."""
    from starlette.testclient import TestClient

    from server.app import create_app
    from server.client import Handlers, MrtrClient, accept
    from server.config import ServerConfig

    with pytest.warns(UserWarning):
        app = create_app(ServerConfig(task_poll_interval_ms=20))
    confirm = Handlers(elicit=lambda params: accept(confirm=True))
    # A replica on the public development keys serves this machine only: call from loopback.
    with TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 50000)) as http:
        client = MrtrClient("http://127.0.0.1/mcp", http=http, handlers=confirm)
        flow = client.call_tool_as_task(
            "provision_vm", {"name": "vm-1", "seconds": 0.1}, wire="extension", timeout_s=20
        )
        records = [
            record
            for task_id in [flow.task_id]
            if (record := asyncio.run(app.state.server.task_store.get(task_id))) is not None
        ]
    params = TaskParams()
    assert records
    assert len(records[0].to_json()) == pytest.approx(params.record_bytes, rel=0.25)
    polls = [m for m in flow.messages if m.method == "tasks/get"][:-1]  # while working
    assert polls
    for poll in polls:
        assert body_bytes(poll.rounds[-1].request) == pytest.approx(
            params.poll_request_bytes, rel=0.25
        )
        assert body_bytes(poll.rounds[-1].response) == pytest.approx(
            params.poll_response_bytes, rel=0.25
        )

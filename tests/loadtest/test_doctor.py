"""The deployment doctor (`python -m loadtest doctor`) on deployments a user would build:
two replicas of an official-Python-SDK server (`tests/loadtest/sdk_server.py`) sharing
their key and name, each with a key of its own, each with another name, both with states
that die before their users answer; and the lab's
replicas behind a round-robin HAProxy and behind its cookie-sticky one. Exit status 0 when
ready for MRTR, 1 when not; the JSON names each check, its evidence and its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from loadtest.config import LoadTestConfig
from loadtest.harness.cluster import Cluster
from loadtest.harness.haproxy import Backend, HAProxy, render_config
from server.harness.process import free_port
from tests.loadtest.test_target import SdkServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def doctor(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], str]:
    """`python -m loadtest doctor ARGS --json F`: its exit status, F, and what it printed."""
    report = tmp_path / "doctor.json"
    argv = ["doctor", "--think-time-s", "0.5", "--limit-probe-s", "0.5", *args]
    argv += ["--json", str(report)]
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", *argv],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.exists(), done.stderr
    return done.returncode, json.loads(report.read_text()), done.stdout


@contextmanager
def sdk_replicas(tmp_path: Path, *envs: dict[str, str]) -> Iterator[list[str]]:
    """Replicas of the SDK server, one per environment, their URLs while they run."""
    with ExitStack() as stack:
        servers = []
        for index, env in enumerate(envs):
            server = SdkServer(tmp_path / f"replica{index}.log", env=env)
            stack.callback(server.stop)
            servers.append(server)
        for server in servers:
            server.wait_until_listening()
        yield [server.url for server in servers]


def check(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["name"] == name)


def test_sdk_replicas_sharing_keys_and_name_are_ready(tmp_path: Path) -> None:
    with sdk_replicas(tmp_path, {}, {}) as urls:
        status, report, printed = doctor(tmp_path, *urls)
    assert status == 0, printed
    assert report["ready"] is True
    across = check(report, "state-across-replicas")
    assert across["passed"] and "2 ordered pairs" in across["evidence"]
    assert {"name", "passed", "evidence", "fix"} <= set(across)


def test_sdk_replicas_each_with_its_own_key_fail_naming_the_key(tmp_path: Path) -> None:
    own = {"SDK_STATE_KEY": "own"}
    with sdk_replicas(tmp_path, own, own) as urls:
        status, report, printed = doctor(tmp_path, *urls)
    assert status == 1
    assert report["ready"] is False
    first = report["checks"][0]  # the failed checks come first
    assert first["name"] == "state-across-replicas" and not first["passed"]
    assert "-32602" in first["evidence"] and "cause: another key" in first["evidence"]
    assert "same requestState keys" in first["fix"]
    assert printed.startswith("FAIL  state-across-replicas")


def test_sdk_replicas_with_different_names_fail_naming_the_audience(tmp_path: Path) -> None:
    with sdk_replicas(tmp_path, {"SDK_SERVER_NAME": "rooms"}, {"SDK_SERVER_NAME": "money"}) as urls:
        status, report, _ = doctor(tmp_path, *urls)
    assert status == 1
    failed = check(report, "state-across-replicas")
    assert not failed["passed"]
    assert "cause: another server name" in failed["evidence"]
    assert "'rooms'" in failed["evidence"] and "'money'" in failed["evidence"]
    assert "same server name" in failed["fix"]


def test_sdk_replicas_whose_states_die_before_users_answer_fail_with_the_lifetime(
    tmp_path: Path,
) -> None:
    # states of 0.6 s, users who think 1 s: retried at 0.125, 0.25, 0.5 and 1 s
    short = {"SDK_STATE_TTL_S": "0.6"}
    with sdk_replicas(tmp_path, short, short) as urls:
        options = ["--think-time-s", "1", "--tool", "transfer"]
        status, report, printed = doctor(tmp_path, *urls, *options)
    assert status == 1, printed
    lifetime = check(report, "state-lifetime")
    assert not lifetime["passed"]
    assert (
        "-32602" in lifetime["evidence"] and "shorter than the think time" in lifetime["evidence"]
    )
    assert "RequestStateSecurity(ttl=...)" in lifetime["fix"]
    figures = lifetime["figures"]
    assert figures["ttl_at_least_s"] < 0.6 <= figures["ttl_at_most_s"]
    # a retry made at once still lands on the other replica: only the lifetime is short
    assert check(report, "state-across-replicas")["passed"]


@pytest.mark.parametrize(("arch", "ready"), [("mrtr", False), ("sticky", True)])
def test_legacy_affinity_fails_round_robin_and_passes_sticky_haproxy(
    tmp_path: Path, arch: str, ready: bool
) -> None:
    with Cluster(LoadTestConfig(arch=arch, replicas=2)) as cluster:
        # get_weather asks on the stream and is cheap (the lab's state-carrying quote
        # spends seconds of CPU a call); the doctor mints its callers' tokens with the
        # deployment's secret
        options = ["--tool", "get_weather", "--balancer-rounds", "4"]
        secret = {"MRTR_JWT_SECRET": cluster.jwt_secret}
        status, report, printed = doctor(tmp_path, "--balancer", cluster.url, *options, env=secret)
    affinity = check(report, "affinity")
    assert affinity["passed"] is ready, printed
    assert status == (0 if ready else 1), printed
    if not ready:
        assert "did not complete" in affinity["evidence"]
        assert "cookie" in affinity["fix"] and "Mcp-Session-Id" in affinity["fix"]


def test_a_balancer_that_drops_mcp_name_fails_the_headers_check(tmp_path: Path) -> None:
    with Cluster(LoadTestConfig(arch="sticky", replicas=2)) as cluster:
        port, socket = free_port(), tmp_path / "dropping.sock"
        backends = [Backend(name, replica.port) for name, replica in cluster.replicas.items()]
        config = render_config(lb_port=port, backends=backends, sticky=True, admin_socket=socket)
        config = config.replace(
            "    default_backend", "    http-request del-header Mcp-Name\n    default_backend"
        )
        dropping = HAProxy(config, tmp_path).start(socket)
        try:
            token = cluster.user_headers()["Authorization"].removeprefix("Bearer ")
            replica = f"http://127.0.0.1:{cluster.replicas['r1'].port}/mcp"
            options = ["--token", token, "--tool", "get_weather", "--balancer-rounds", "2"]
            balancer = f"http://127.0.0.1:{port}/mcp"
            status, report, printed = doctor(tmp_path, replica, "--balancer", balancer, *options)
        finally:
            dropping.stop()
    headers = check(report, "headers-through-balancer")
    assert status == 1, printed
    assert not headers["passed"]
    assert "Mcp-Name header" in headers["evidence"] and "Mcp-Name" in headers["fix"]


def test_a_balancer_that_cuts_an_idle_stream_before_the_think_time_fails(
    tmp_path: Path,
) -> None:
    config = LoadTestConfig(
        arch="sticky", replicas=2, scenario="idle-timeout", think_time_median_s=2.0
    )
    with Cluster(config) as cluster:
        # HAProxy cuts a stream idle for lb_idle_timeout_s; the users think longer
        think_s = str(config.lb_idle_timeout_s + 1.0)
        options = ["--tool", "get_weather", "--balancer-rounds", "2", "--think-time-s", think_s]
        secret = {"MRTR_JWT_SECRET": cluster.jwt_secret}
        status, report, printed = doctor(tmp_path, "--balancer", cluster.url, *options, env=secret)
    idle = check(report, "idle-stream")
    assert status == 1, printed
    assert not idle["passed"] and f"({float(think_s):g} s)" in idle["evidence"]
    assert "timeout" in idle["fix"]
    assert check(report, "affinity")["passed"], printed

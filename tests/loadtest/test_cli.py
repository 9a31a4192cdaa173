"""The load test's command line: clusters stop cleanly, bad settings are one-line errors."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from loadtest.harness.haproxy import HAProxy
from loadtest.users.tool_mix import known_tools
from server.harness.process import free_port


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")
@pytest.mark.integration
def test_cluster_up_stops_everything_on_sigterm() -> None:
    lb_port = free_port()
    command = [sys.executable, "-m", "loadtest", "cluster", "up", "--replicas", "2"]
    cluster = subprocess.Popen(
        [*command, "--lb-port", str(lb_port)], stdout=subprocess.PIPE, text=True
    )
    lines = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = cluster.stdout.readline()
            lines.append(line)
            if line.startswith("Ctrl-C"):
                break
        pids = [int(p) for p in re.findall(r"\(pid (\d+)\)", "".join(lines))]
        # Two replicas, the Redis their single-use task store shares, and haproxy.
        assert len(pids) == 4, lines
        assert all(alive(p) for p in pids) and not port_is_free(lb_port)
        cluster.send_signal(signal.SIGTERM)
        assert cluster.wait(30) == 0
    finally:
        if cluster.poll() is None:
            # Stopped as an operator would, so what it started stops too, then for good.
            cluster.send_signal(signal.SIGTERM)
            try:
                cluster.wait(30)
            except subprocess.TimeoutExpired:
                cluster.kill()
    time.sleep(0.2)
    assert not any(alive(p) for p in pids)
    assert port_is_free(lb_port)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["scenario", "steady", "--replicas", "0"], "at least one replica"),
        (["scenario", "steady", "--users", "-1"], "users and spawn rate must be positive"),
        (["scenario", "steady", "--tools", "crunch=x"], "is not a number"),
        (["compare", "--tools", "get_weather=0,echo=0"], "at least one above 0"),
        (["swarm", "--fault", "crash"], "--fault needs --headless"),
    ],
)
@pytest.mark.slow
def test_bad_settings_are_a_one_line_error(args: list[str], message: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "loadtest", *args], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_an_unknown_tool_is_refused_before_the_run_naming_the_known_ones() -> None:
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "loadtest", "scenario", "steady", "--tools", "nope=1,echo"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "unknown tool 'nope' in --tools" in out.stderr
    assert all(tool in out.stderr for tool in known_tools()), out.stderr
    assert time.monotonic() - started < 10  # refused, not run: no cluster, no Locust

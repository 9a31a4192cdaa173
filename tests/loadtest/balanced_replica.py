"""One replica of the lab's server behind the lab's HAProxy, not sticky: the set-up of the
tests that send real sockets through the edge to a replica."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loadtest.harness.haproxy import Backend, HAProxy, RuntimeApi, render_config
from server.harness.process import ServerProcess, free_port
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env


@dataclass(frozen=True)
class BalancedReplica:
    """The balancer's port, its runtime API, and the replica behind it."""

    lb_port: int
    runtime: RuntimeApi
    replica: ServerProcess


@contextmanager
def replica_behind_haproxy(
    tmp_path: Path, replica_args: list[str], **haproxy: Any
) -> Iterator[BalancedReplica]:
    """A replica started with `replica_args` behind HAProxy configured by `render_config`
    with `haproxy`'s settings; both stopped on the way out, whatever happened (a skip where
    HAProxy is not installed)."""
    if not HAProxy.available():
        pytest.skip("haproxy is not installed")
    env = {**os.environ, "MRTR_STATE_KEYS": state_keys_env(KEY_A), "MRTR_JWT_SECRET": JWT_SECRET}
    replica = ServerProcess(args=replica_args, env=env).start()
    try:
        admin = tmp_path / "admin.sock"
        lb_port = free_port()
        text = render_config(
            lb_port=lb_port,
            backends=[Backend("r1", replica.port)],
            sticky=False,
            admin_socket=admin,
            **haproxy,
        )
        lb = HAProxy(text, tmp_path).start(admin)
        try:
            yield BalancedReplica(lb_port=lb_port, runtime=RuntimeApi(admin), replica=replica)
        finally:
            lb.stop()
    finally:
        replica.stop()

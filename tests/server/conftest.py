"""Fixtures for the server tests: in-process apps, clients that answer like a user, replicas."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from server.app import create_app
from server.client import Handlers, MrtrClient, accept, sampled
from server.config import ServerConfig, StateKey
from server.harness.conformance import SuiteNotInstalled, suite_paths
from server.harness.process import ServerProcess

KEY_A = StateKey("a", bytes(range(32)))
KEY_B = StateKey("b", bytes(range(1, 33)))
JWT_SECRET = "test-secret-for-the-lab-tests-only"


def state_keys_env(*keys: StateKey) -> str:
    """The MRTR_STATE_KEYS value for `keys` (first seals)."""
    return ",".join(f"{k.key_id}:{base64.b64encode(k.key_bytes).decode()}" for k in keys)


#: A 2025-11-25 `initialize` from a client that can answer elicitations.
LEGACY_INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def make_config(**overrides: Any) -> ServerConfig:
    """A test configuration with fixed keys and secret."""
    options: dict[str, Any] = {
        "state_keys": (KEY_A,),
        "jwt_secret": JWT_SECRET,
        # An app in this process runs no lifespan to stop CPU workers: the demo tools' few
        # milliseconds stay on the loop; the CPU pool's tests set their own bound.
        "cpu_inline_max_ms": 10.0,
    }
    options.update(overrides)
    return ServerConfig(**options)


def user_answers(**elicited: dict[str, Any]) -> Handlers:
    """A client that answers elicitations by key of their schema, samples 'Paris', has roots."""

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        fields = set((params.get("requestedSchema") or {}).get("properties", {}))
        for answer in elicited.values():
            if set(answer) <= fields and answer:
                return accept(**answer)
        return accept(name="octocat")

    return Handlers(
        elicit=elicit,
        sample=lambda params: sampled("Paris"),
        list_roots=lambda params: {"roots": [{"uri": "file:///work", "name": "work"}]},
    )


@pytest.fixture
def config() -> ServerConfig:
    return make_config()


@pytest.fixture
def app(config: ServerConfig) -> Iterator[Any]:
    app = create_app(config)
    yield app
    # A client in this process runs no lifespan: the CPU workers a tool started end here.
    app.state.server.cpu.close()


@pytest.fixture
def client(app: Any) -> Iterator[MrtrClient]:
    with MrtrClient.for_app(app, handlers=user_answers()) as c:
        yield c


@pytest.fixture
def replicas() -> Iterator[Callable[..., ServerProcess]]:
    """Start replicas as separate processes (shared test keys); all stopped at the end."""
    started: list[ServerProcess] = []

    def start(*args: str, keys: tuple[StateKey, ...] = (KEY_A,), **kw: Any) -> ServerProcess:
        env = {"MRTR_STATE_KEYS": state_keys_env(*keys), "MRTR_JWT_SECRET": JWT_SECRET}
        process = ServerProcess(args=args, env={**os.environ, **env}, **kw)
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()


@pytest.fixture(scope="session")
def conformance_server() -> Iterator[ServerProcess]:
    """One `python -m server --conformance` for every conformance run of the session."""
    try:
        suite_paths()
    except SuiteNotInstalled as exc:
        pytest.skip(str(exc))
    with ServerProcess(args=["--conformance"]) as server:
        yield server

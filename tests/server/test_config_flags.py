"""`python -m server`'s flags and `ServerConfig`'s fields agree: one flag per setting."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

from server.__main__ import replica_config, serve_parser
from server.config import ServerConfig
from server.flags import flags_of, setting_of
from server.listener import Listener
from tests.server.conftest import JWT_SECRET, KEY_A, state_keys_env

#: The flags `python -m server` took before its flags were made from the fields; scripts
#: and the load test's replicas pass them, so each must still be accepted.
FLAGS_USERS_TYPE = {
    "--host",
    "--port",
    "--replica-id",
    "--tool-version",
    "--conformance",
    "--shed-every-units",
    "--shed-in-flight",
    "--task-store",
    "--task-store-volatile",
    "--task-poll-interval-ms",
    "--task-lease-s",
    "--task-list-page-size",
    "--legacy-store",
    "--legacy-answer-timeout-s",
    "--legacy-keepalive-s",
    "--state-ttl-s",
    "--allow-origin",
    "--require-auth",
    "--jwt-allow-no-exp",
    "--allow-development-keys",
    "--shutdown-timeout-s",
    "--max-connections",
    "--idle-timeout-s",
    "--header-timeout-s",
    "--max-held-calls-per-principal",
    "--max-sessions-per-principal",
    "--max-tasks-per-principal",
    "--rate-per-principal",
    "--loop",
    "--http",
    "--log-level",
}


@pytest.fixture(autouse=True)
def _keys_and_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys and secret from the environment, as a deployed replica has them."""
    monkeypatch.setenv("MRTR_STATE_KEYS", state_keys_env(KEY_A))
    monkeypatch.setenv("MRTR_JWT_SECRET", JWT_SECRET)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The parser's options by destination, without --help and the hidden older names."""
    return {
        action.dest: action
        for action in parser._actions
        if action.dest != "help" and action.help != argparse.SUPPRESS
    }


def _config(argv: list[str]) -> ServerConfig:
    args = serve_parser().parse_args(argv)
    return replica_config(args, Listener(port=args.port, host=args.host))


def test_every_field_has_a_flag_or_says_why_not() -> None:
    options = _options(serve_parser())
    for field in dataclasses.fields(ServerConfig):
        described = setting_of(field)
        if described.cli:
            assert field.name in options, f"{field.name} has no flag"
        else:
            assert field.name not in options
            assert "flag" in described.help, f"{field.name} does not say why it has no flag"


def test_every_flag_sets_a_field() -> None:
    fields = {
        field.name for config in (ServerConfig, Listener) for field in dataclasses.fields(config)
    }
    for dest in _options(serve_parser()):
        assert dest in fields, f"flag for {dest} sets no field"


def test_each_flag_is_the_one_its_field_names() -> None:
    options = _options(serve_parser())
    for config in (ServerConfig, Listener):
        for name, flag in flags_of(config).items():
            assert options[name].option_strings == [flag]


def test_the_flags_users_type_are_still_accepted() -> None:
    accepted = {flag for action in serve_parser()._actions for flag in action.option_strings}
    assert accepted >= FLAGS_USERS_TYPE


def test_an_older_flag_name_still_sets_its_field_and_is_not_shown() -> None:
    assert _config(["--legacy-answer-timeout-s", "12"]).answer_timeout_s == 12.0
    assert "--legacy-answer-timeout-s" not in serve_parser().format_help()


def test_every_option_has_help_that_shows_its_default() -> None:
    for dest, action in _options(serve_parser()).items():
        assert action.help, f"{dest} has no help"
        if dest != "replica_id":
            assert "(default: " in action.help, f"{dest}'s help does not show its default"


def test_the_flags_defaults_are_the_fields() -> None:
    parser = serve_parser()
    for config in (ServerConfig, Listener):
        for field in dataclasses.fields(config):
            if setting_of(field).cli and field.name != "replica_id":
                default = parser.get_default(field.name)
                # A repeatable flag starts unset, and the field keeps its own (empty) default.
                assert default == field.default or (default, field.default) == (None, ()), (
                    field.name
                )
    assert _config([]) == ServerConfig(replica_id="replica-8000", loopback_only=True)


def test_the_replica_is_named_for_its_port_unless_told() -> None:
    assert _config(["--port", "9100"]).replica_id == "replica-9100"
    assert _config(["--port", "9100", "--replica-id", "r2"]).replica_id == "r2"


def test_the_bind_address_says_whether_the_replica_is_loopback_only() -> None:
    assert _config(["--host", "::1"]).loopback_only
    assert _config(["--host", "localhost"]).loopback_only
    assert not _config(["--host", "0.0.0.0", "--allow-development-keys"]).loopback_only


def _another_value(field: dataclasses.Field[Any]) -> tuple[list[str], object]:
    """Command-line words that set `field` to a value other than its default, and the value."""
    flag = flags_of(ServerConfig)[field.name]
    default = field.default
    if field.name in ("task_store", "legacy_store"):
        return [flag, "redis://127.0.0.1:6399/3"], "redis://127.0.0.1:6399/3"
    if field.name == "allowed_origins":
        origins = ("http://a.example", "https://b.example:8443")
        return [flag, origins[0], flag, origins[1]], origins
    if isinstance(default, bool):
        return [flag], not default
    if field.name == "tool_version":
        return [flag, "2"], 2
    if isinstance(default, int):
        return [flag, str(default + 7)], default + 7
    if isinstance(default, float):
        return [flag, str(default * 2 + 0.5)], default * 2 + 0.5
    assert isinstance(default, str), field.name
    return [flag, default + "-other"], default + "-other"


@pytest.mark.parametrize(
    "field",
    [field for field in dataclasses.fields(ServerConfig) if setting_of(field).cli],
    ids=lambda field: field.name,
)
def test_each_flag_sets_its_own_field_and_no_other(field: dataclasses.Field[Any]) -> None:
    argv, value = _another_value(field)
    config = _config(argv)
    assert getattr(config, field.name) == value
    assert dataclasses.replace(config, **{field.name: getattr(_config([]), field.name)}) == (
        _config([])
    )

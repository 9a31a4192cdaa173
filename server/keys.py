"""The replica's secrets: the requestState keys, the token secret, the metrics token.

Each is read from the environment, never from a flag: a command line is visible to every
user of the machine (ps). Without them a replica falls back to public development values,
which make a laptop demo work out of the box and are announced with a warning: anyone can
forge state or tokens with them, so the server refuses to serve with them beyond this
machine (`server.config`, `server.transport.guard`).
"""

from __future__ import annotations

import base64
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

DEV_STATE_KEY_ID = "dev"
DEV_STATE_KEY = base64.b64encode(b"mrtr-lab-development-key-32bytes").decode()
DEV_JWT_SECRET = "mrtr-lab-development-secret-do-not-deploy"


class ConfigError(ValueError):
    """A setting that cannot work, with a message that says which and why."""


@dataclass(frozen=True)
class StateKey:
    """One AES-256-GCM key for sealing requestState, named by a key id carried in every token."""

    key_id: str
    key_bytes: bytes


def parse_state_keys(spec: str) -> tuple[StateKey, ...]:
    """Parse `kid:base64key[,kid:base64key...]`; the first key seals, all keys open."""
    keys = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        key_id, sep, encoded = item.partition(":")
        if not sep or not key_id:
            raise ConfigError(f"state key {item!r} is not of the form kid:base64key")
        try:
            key_bytes = base64.b64decode(encoded, validate=True)
        except ValueError as exc:
            raise ConfigError(f"state key {key_id!r} is not valid base64") from exc
        if len(key_bytes) != 32:
            raise ConfigError(f"state key {key_id!r} has {len(key_bytes)} bytes; AES-256 needs 32")
        keys.append(StateKey(key_id, key_bytes))
    if not keys:
        raise ConfigError("no state keys given")
    if len({k.key_id for k in keys}) != len(keys):
        raise ConfigError("state key ids must be unique")
    return tuple(keys)


def keys_from_environment() -> tuple[StateKey, ...]:
    """The keys in MRTR_STATE_KEYS, or the public development key (with a warning)."""
    spec = os.environ.get("MRTR_STATE_KEYS", "")
    if spec:
        return parse_state_keys(spec)
    warnings.warn(
        "MRTR_STATE_KEYS is unset: sealing requestState with the public development key",
        stacklevel=3,
    )
    return (StateKey(DEV_STATE_KEY_ID, base64.b64decode(DEV_STATE_KEY)),)


def jwt_secret_from_environment() -> str:
    """The secret in MRTR_JWT_SECRET, or the public development secret (with a warning)."""
    secret = os.environ.get("MRTR_JWT_SECRET", "")
    if secret:
        return secret
    warnings.warn(
        "MRTR_JWT_SECRET is unset: accepting tokens signed with the public development secret",
        stacklevel=3,
    )
    return DEV_JWT_SECRET


def metrics_token_from_environment() -> str:
    """The token /metrics asks for, from MRTR_METRICS_TOKEN; empty: /metrics asks for none."""
    return os.environ.get("MRTR_METRICS_TOKEN", "")


def public_development_settings(state_keys: Iterable[StateKey], jwt_secret: str) -> list[str]:
    """Which of these secrets are the public development values, by environment name."""
    development_key = base64.b64decode(DEV_STATE_KEY)
    public = []
    if any(key.key_bytes == development_key for key in state_keys):
        public.append("MRTR_STATE_KEYS")
    if jwt_secret == DEV_JWT_SECRET:
        public.append("MRTR_JWT_SECRET")
    return public

"""One deployment's replicas, as the notebooks start them: fresh shared secrets, an app each.

Every replica of a deployment shares two secrets: the AES-256 keys that seal
`requestState` (so any replica opens any other's state) and the secret that signs users'
bearer tokens. A notebook makes fresh ones, so nothing in it relies on the lab's public
development values, and starts its replicas with them: as ASGI apps in its own process
(`app`, no ports, no network) or as `python -m server` processes (`environment`).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette

from server.app import create_app
from server.config import ServerConfig, StateKey
from server.transport.auth import mint_token


def new_state_key(key_id: str) -> StateKey:
    """A fresh AES-256 key for sealing requestState, named `key_id`."""
    return StateKey(key_id, os.urandom(32))


@dataclass(frozen=True)
class LabDeployment:
    """The secrets a deployment's replicas share, and replicas that share them.

    `state_keys` are in the order a replica uses them: the first seals, every one opens.
    """

    state_keys: tuple[StateKey, ...] = field(default_factory=lambda: (new_state_key("k1"),))
    jwt_secret: str = field(default_factory=lambda: base64.b64encode(os.urandom(32)).decode())

    @property
    def state_key(self) -> StateKey:
        """The key new states are sealed with."""
        return self.state_keys[0]

    def app(self, replica_id: str, **settings: Any) -> Starlette:
        """A replica in this process: the server's own app, with these secrets and `settings`
        (any `ServerConfig` field; `state_keys=` gives this replica keys of its own)."""
        options: dict[str, Any] = {
            "state_keys": self.state_keys,
            "jwt_secret": self.jwt_secret,
            **settings,
        }
        return create_app(ServerConfig(replica_id=replica_id, **options))

    def environment(self) -> dict[str, str]:
        """The environment a `python -m server` replica reads these secrets from."""
        keys = ",".join(
            f"{key.key_id}:{base64.b64encode(key.key_bytes).decode()}" for key in self.state_keys
        )
        return {"MRTR_STATE_KEYS": keys, "MRTR_JWT_SECRET": self.jwt_secret}

    def token(self, principal: str) -> str:
        """A bearer token naming `principal`, signed with the deployment's secret."""
        return mint_token(principal, self.jwt_secret)

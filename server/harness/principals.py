"""Principals for simulated users: a bearer token each, signed with the secret a harness
gave its replicas.

Every cap a replica keeps is per principal, and every caller without a token is the one
anonymous principal: a swarm of anonymous users would share one rate, one count of tasks
and sessions. With a token each, every simulated user is held to its own caps, as every
person behind a real client is.
"""

from __future__ import annotations

import secrets

from server.transport.auth import mint_token

#: How long a simulated user's token lasts: longer than any run.
USER_TOKEN_TTL_S = 24 * 3600.0


def user_token(secret: str, principal: str | None = None) -> str:
    """A token for `principal` (a fresh `user-<hex>` when None), signed with `secret`."""
    name = principal or f"user-{secrets.token_hex(6)}"
    return mint_token(name, secret, ttl_s=USER_TOKEN_TTL_S)


def user_headers(secret: str | None, principal: str | None = None) -> dict[str, str]:
    """The Authorization header of a simulated user; none without a secret (anonymous)."""
    if not secret:
        return {}
    return {"Authorization": f"Bearer {user_token(secret, principal)}"}

"""Principals: who is calling, from an `Authorization: Bearer <JWT>` header.

The lab uses HS256 tokens whose `sub` claim is the principal; every replica shares the
secret. No header means the anonymous principal. A token that is present but invalid is
an HTTP 401, because guessing a principal would let state minted for one user open for
another; so is a token whose `sub` is the anonymous principal's name.
"""

from __future__ import annotations

import time

import jwt

ANONYMOUS = "anonymous"


class AuthError(Exception):
    """An Authorization header that does not prove a principal."""


class Authenticator:
    """Turns Authorization headers into principals, remembering tokens already verified."""

    def __init__(self, secret: str, *, require_exp: bool = True, cache_size: int = 4096) -> None:
        self._secret = secret
        # A token without an expiry is valid forever once leaked: refused unless relaxed.
        self._required_claims = ["sub", "exp"] if require_exp else ["sub"]
        self._cache: dict[str, tuple[str, float]] = {}
        self._cache_size = cache_size

    def principal(self, authorization: str | None) -> str:
        """The principal an Authorization header proves, or ANONYMOUS when there is none."""
        if not authorization:
            return ANONYMOUS
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("Authorization must be 'Bearer <token>'")
        token = token.strip()
        cached = self._cache.get(token)
        if cached is not None and cached[1] > time.time():
            return cached[0]
        try:
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=["HS256"],
                options={"require": self._required_claims},
            )
        except jwt.PyJWTError as exc:
            raise AuthError(f"invalid token: {exc}") from exc
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise AuthError("invalid token: sub must be a non-empty string")
        if subject == ANONYMOUS:
            # Callers without a token act as this principal: a token naming it would open
            # their requestState, their tasks and their sessions.
            raise AuthError(f"invalid token: sub {ANONYMOUS!r} is reserved for callers without one")
        if len(self._cache) >= self._cache_size:
            self._cache.clear()
        self._cache[token] = (subject, float(claims.get("exp", time.time() + 60)))
        return subject


def mint_token(principal: str, secret: str, *, ttl_s: float = 24 * 3600) -> str:
    """A development token for `principal`, valid for `ttl_s` seconds."""
    now = int(time.time())
    return jwt.encode({"sub": principal, "iat": now, "exp": now + int(ttl_s)}, secret, "HS256")

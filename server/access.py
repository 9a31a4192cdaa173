"""Who may call a replica, and on whose behalf: its secrets, its bind, origins and tokens.

The settings the guard (`server.transport.guard`) and the authenticator apply, stated once
like every setting (`server.flags`); `ServerConfig` builds on them. Beyond loopback the
defaults are strict: a caller needs a bearer token, and the public development key and
secret are refused (`server.keys`).
"""

from __future__ import annotations

from dataclasses import dataclass

from server.flags import setting
from server.keys import (
    ConfigError,
    StateKey,
    jwt_secret_from_environment,
    keys_from_environment,
    metrics_token_from_environment,
    public_development_settings,
)


@dataclass(frozen=True)
class AccessConfig:
    """Who may call one replica: the secrets it shares with the others, what its bind
    allows, which pages and which tokens it accepts, and what a refused caller hears."""

    # Keys and secret come from the environment, never from flags: a command line is
    # visible to every user of the machine (ps).
    state_keys: tuple[StateKey, ...] = setting(
        default_factory=keys_from_environment,
        help="AES-256-GCM keys for requestState; the first seals, all open (key rotation). "
        "Read from MRTR_STATE_KEYS (kid:base64key,...), not a flag: it is a secret",
        cli=False,
    )
    jwt_secret: str = setting(
        default_factory=jwt_secret_from_environment,
        help="HS256 secret for bearer tokens (sub is the principal). Read from "
        "MRTR_JWT_SECRET, not a flag: it is a secret",
        cli=False,
    )
    metrics_token: str = setting(
        default_factory=metrics_token_from_environment,
        help="bearer token /metrics asks for, when set. Read from MRTR_METRICS_TOKEN, not a "
        "flag: it is a secret",
        cli=False,
    )
    loopback_only: bool = setting(
        True,
        help="bound to loopback: Host must name this machine (DNS rebinding), and pages on "
        "this machine may call. Set from the bind address (--host), so it has no flag",
        cli=False,
    )
    allowed_origins: tuple[str, ...] = setting(
        (),
        help="a page origin (scheme://host[:port]) allowed to call, besides this machine's on "
        "a loopback bind; repeatable. Any other Origin is refused, and Origin: null always is",
        flag="--allow-origin",
        metavar="ORIGIN",
    )
    require_auth: bool = setting(
        False,
        help="refuse callers without a bearer token (HTTP 401) instead of serving them "
        "anonymously, on loopback too (beyond loopback they are refused unless "
        "--allow-anonymous)",
    )
    allow_anonymous: bool = setting(
        False,
        help="serve callers without a bearer token on a bind beyond loopback (by default "
        "they get HTTP 401 there: every anonymous caller is one principal, sharing its caps)",
    )
    jwt_allow_no_exp: bool = setting(
        False, help="accept tokens that never expire (by default a token must have exp)"
    )
    allow_development_keys: bool = setting(
        False,
        help="serve beyond loopback with the public development key and secret (by default "
        "the server refuses to start, and a replica on loopback refuses requests relayed "
        "from elsewhere: anyone could forge state and tokens with them)",
    )
    state_error_detail: bool = setting(
        False,
        help="tell every caller why its requestState was refused, for a classroom (by default "
        "the reason is logged and counted, and told only to the state's own principal: "
        '"another principal\'s" would tell a thief that a stolen state is genuine)',
    )

    def __post_init__(self) -> None:
        if not self.state_keys:
            raise ConfigError("at least one state key is needed")
        public = self.public_development_settings()
        if public and not self.loopback_only and not self.allow_development_keys:
            raise ConfigError(
                f"refusing to serve beyond loopback with the public development "
                f"{' and '.join(public)}: set them (or pass --allow-development-keys)"
            )

    @property
    def anonymous_allowed(self) -> bool:
        """Whether callers without a token are served: on loopback unless --require-auth,
        beyond it only with --allow-anonymous."""
        return not self.require_auth and (self.loopback_only or self.allow_anonymous)

    def public_development_settings(self) -> list[str]:
        """Which settings still hold the public development values, by environment name."""
        return public_development_settings(self.state_keys, self.jwt_secret)

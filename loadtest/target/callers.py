"""Who a target's simulated users are to it, and what they send: the options every command
that calls a target's own tools shares (`swarm --target`, `verify-plan --target`), stated
once."""

from __future__ import annotations

from dataclasses import dataclass

from server.flags import setting


@dataclass(frozen=True)
class TargetCallers:
    """The simulated users' credentials for a target (one bearer token for all, or one each
    from a file) and the workload file stating their arguments and answers."""

    token: str | None = setting(
        None, help="with --target: a bearer token every user sends; without one, anonymous"
    )
    tokens_file: str | None = setting(
        None, help="with --target: bearer tokens, one a line, one per simulated user"
    )
    workload: str | None = setting(
        None,
        metavar="FILE",
        help="with --target: a workload file (TOML): per tool, its arguments and answers "
        "(the rest drawn from the tool's schemas)",
    )

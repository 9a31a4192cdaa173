"""Command line: run a replica, mint a development token, or run the conformance suite.

python -m server [--host HOST] [--port PORT] [--replica-id ID] [--tool-version 1|2] ...
                 (one flag per setting of `ServerConfig`; `--help` lists them all)
python -m server token NAME [--ttl-s S]
python -m server conformance [--scenario NAME ... [--spec-version 2025-11-25]
                             | --requirements 2026-07-28|2025-11-25]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from server.config import ConfigError, ServerConfig
from server.flags import add_flags, setting_of, values_from_flags
from server.listener import Listener


def _serve(argv: list[str]) -> int:
    from server.serve import serve_replica

    parser = serve_parser()
    args = parser.parse_args(argv)
    listener = Listener(**values_from_flags(Listener, args))
    try:
        config = replica_config(args, listener)
    except ConfigError as exc:
        parser.error(str(exc))
    serve_replica(config, listener)
    return 0


def serve_parser() -> argparse.ArgumentParser:
    """The parser of `python -m server`: where to listen, then one flag per replica setting."""
    parser = argparse.ArgumentParser(
        prog="python -m server",
        description=__doc__.split("\n")[0],
        epilog="Settings without a flag: "
        + "; ".join(
            f"{field.name}: {setting_of(field).help}"
            for field in dataclasses.fields(ServerConfig)
            if not setting_of(field).cli
        ),
    )
    add_flags(parser.add_argument_group("where the process listens"), Listener)
    # Left unset, the replica is named for its port (see replica_config).
    add_flags(
        parser.add_argument_group("how the replica behaves"),
        ServerConfig,
        defaults={"replica_id": None},
    )
    return parser


def replica_config(args: argparse.Namespace, listener: Listener) -> ServerConfig:
    """The replica's configuration from its parsed flags and where it listens."""
    values = values_from_flags(ServerConfig, args)
    values.setdefault("replica_id", f"replica-{listener.port}")
    return ServerConfig(loopback_only=listener.loopback_only, **values)


def token_parser() -> argparse.ArgumentParser:
    """The parser of `python -m server token`."""
    parser = argparse.ArgumentParser(prog="python -m server token")
    parser.add_argument("name", help="the principal (JWT sub) to mint a token for")
    parser.add_argument(
        "--ttl-s",
        type=float,
        default=24 * 3600,
        metavar="S",
        help="how long the token stays valid (default: %(default)s)",
    )
    return parser


def _token(argv: list[str]) -> int:
    args = token_parser().parse_args(argv)
    from server.transport.auth import mint_token

    print(mint_token(args.name, ServerConfig().jwt_secret, ttl_s=args.ttl_s))
    return 0


def _conformance(argv: list[str]) -> int:
    from server.harness.conformance import main

    return main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"token": _token, "conformance": _conformance}
    if argv and argv[0] in commands:
        return commands[argv[0]](argv[1:])
    return _serve(argv)


if __name__ == "__main__":
    sys.exit(main())

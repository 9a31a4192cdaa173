"""The soak's attacker as the edge sees it: a source address of its own, and a yes to
every question.

The legitimate users call from 127.0.0.1; the attacker from 127.0.0.2, another loopback
address (Linux routes all of 127.0.0.0/8 to the loopback device), so that limits per
source address at the edge (HAProxy's, `loadtest.harness.haproxy`) tell one from the
other on one machine, as they would tell two machines apart.
"""

from __future__ import annotations

import socket
from typing import Any

import httpx

from server.client import Handlers, accept

#: Where the attacker's connections come from.
ATTACKER_ADDRESS = "127.0.0.2"


def connect(host: str, port: int, timeout_s: float | None = 5.0) -> socket.socket:
    """A TCP connection to `host:port` from the attacker's address."""
    return socket.create_connection(
        (host, port), timeout=timeout_s, source_address=(ATTACKER_ADDRESS, 0)
    )


def transport() -> httpx.HTTPTransport:
    """An httpx transport whose connections come from the attacker's address."""
    return httpx.HTTPTransport(local_address=ATTACKER_ADDRESS)


def _yes(params: dict[str, Any]) -> dict[str, Any]:
    fields = (params.get("requestedSchema") or {}).get("properties", {})
    return accept(**{k: v.get("type") == "boolean" or "mallory" for k, v in fields.items()})


#: The attacker's answer to every question: yes (or its name).
YES = Handlers(elicit=_yes)

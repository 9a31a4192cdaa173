"""What an attacker's raw socket reads back: the HTTP status its answer starts with, and
for a server error, who answered it."""

from __future__ import annotations


def status_of(first_bytes: bytes) -> str:
    """The HTTP status at the start of an answer, or "closed" for none."""
    parts = first_bytes.split(b" ", 2)
    return parts[1].decode() if len(parts) > 1 and parts[0].startswith(b"HTTP/") else "closed"


def answer_of(head: bytes) -> str:
    """The status of an answer's `head` (its first bytes); a server error (5xx) also says
    whether a replica answered it (HAProxy marks a replica's answers with `X-Served-By`)
    or the edge itself (a queue that timed out, no replica up)."""
    status = status_of(head)
    if not status.startswith("5"):
        return status
    return f"{status} {'replica' if b'x-served-by:' in head.lower() else 'edge'}"

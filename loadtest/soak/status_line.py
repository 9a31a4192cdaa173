"""What an attacker's raw socket reads back: the HTTP status its answer starts with."""

from __future__ import annotations


def status_of(first_bytes: bytes) -> str:
    """The HTTP status at the start of an answer, or "closed" for none."""
    parts = first_bytes.split(b" ", 2)
    return parts[1].decode() if len(parts) > 1 and parts[0].startswith(b"HTTP/") else "closed"

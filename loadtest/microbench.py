"""In-process microbenchmarks: what one requestState and one request cost, without a network.

- requestState seal and open of a payload, beside raw AES-256-GCM encrypt + decrypt of the
  same plaintext with the same cipher object (the AEAD's own cost, the floor sealing can
  approach); timed in interleaved repeats so a burst elsewhere on the machine hits both.
- one `tools/call` through each ASGI app (the bare endpoint, the lab's server), no sockets.

Each figure is the best of several repeats: the least disturbed by the rest of a shared
machine. Compare figures from the same run only.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import timeit
from collections.abc import Callable
from typing import Any

import pybase64

from loadtest.rounds import call_body, headers_for


def _best_us(timers: dict[str, Callable[[], object]], number: int, repeat: int) -> dict[str, float]:
    """Microseconds per call of each timer: the best of `repeat` interleaved repeats."""
    best = dict.fromkeys(timers, float("inf"))
    for _ in range(repeat):
        for name, fn in timers.items():
            best[name] = min(best[name], timeit.timeit(fn, number=number) / number * 1e6)
    return best


def seal_open_microbench(
    payload_bytes: int = 1024, number: int = 20_000, repeat: int = 7
) -> dict[str, float]:
    """requestState seal and open, microseconds each, beside raw AES-GCM on the same plaintext."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from server.config import StateKey
    from server.mrtr.state import NONCE_BYTES, Origin, StateSealer

    key = StateKey("k", os.urandom(32))
    sealer = StateSealer([key], ttl_s=600)
    origin = Origin("alice", "tools/call", "get_weather", "digest")
    answers = {"github_login": {"action": "accept", "content": {"name": "x" * payload_bytes}}}
    token = sealer.seal(origin, round=1, answers=answers, tool_state={})
    # Raw AES-GCM on a plaintext as long as the sealed one, with an AAD as long.
    sealed_bytes = len(pybase64.b64decode(token.partition(".")[2]))
    plaintext = os.urandom(sealed_bytes - NONCE_BYTES - 16)
    cipher, aad, nonce = AESGCM(key.key_bytes), b"mrtr-lab/requestState/v1/k", os.urandom(12)
    best = _best_us(
        {
            "aead": lambda: cipher.decrypt(nonce, cipher.encrypt(nonce, plaintext, aad), aad),
            "seal": lambda: sealer.seal(origin, round=1, answers=answers, tool_state={}),
            "open": lambda: sealer.open(token, origin),
        },
        number,
        repeat,
    )
    return {
        "payload_bytes": payload_bytes,
        "token_bytes": len(token),
        "plaintext_bytes": len(plaintext),
        "aead_encrypt_decrypt_us": best["aead"],
        "seal_us": best["seal"],
        "open_us": best["open"],
        "seal_plus_open_us": best["seal"] + best["open"],
        "over_aead": (best["seal"] + best["open"]) / best["aead"],
    }


def print_state_report(rs: dict[str, float]) -> None:
    print(
        f"requestState ({rs['payload_bytes']} B payload, {rs['token_bytes']} B token): "
        f"seal {rs['seal_us']:.1f} us + open {rs['open_us']:.1f} us = "
        f"{rs['seal_plus_open_us']:.1f} us; raw AES-256-GCM encrypt + decrypt of the same "
        f"plaintext ({rs['plaintext_bytes']} B) {rs['aead_encrypt_decrypt_us']:.1f} us "
        f"(sealing costs {rs['over_aead']:.1f}x the AEAD)"
    )


def in_process_microbench(number: int = 3000) -> dict[str, float]:
    """Microseconds per request through each ASGI app in this process (no network)."""
    from loadtest.peers.bare import app as bare_app
    from server.app import create_app
    from server.config import ServerConfig, StateKey

    lab_app = create_app(
        ServerConfig(
            state_keys=(StateKey("bench", os.urandom(32)),), jwt_secret=os.urandom(16).hex()
        )
    )
    out = {}
    for name, app in (("bare", bare_app), ("lab", lab_app)):
        body = json.dumps(call_body(1)).encode()
        out[f"{name}_round1_us"] = asyncio.run(_asgi_loop(app, body, number)) * 1e6
    out["lab_overhead_us"] = out["lab_round1_us"] - out["bare_round1_us"]
    return out


async def _asgi_loop(app: Any, body: bytes, number: int) -> float:
    headers = [(k.lower().encode(), v.encode()) for k, v in headers_for("get_weather").items()]
    headers += [(b"host", b"127.0.0.1:8000"), (b"content-length", str(len(body)).encode())]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }  # fmt: skip

    async def one() -> None:
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict[str, Any]:
            return messages.pop() if messages else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            pass

        await app(dict(scope), receive, send)

    for _ in range(min(200, number)):
        await one()
    started = time.perf_counter()
    for _ in range(number):
        await one()
    return (time.perf_counter() - started) / number

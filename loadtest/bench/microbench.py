"""In-process microbenchmarks: what one requestState and one request cost, without a network.

- requestState seal and open of a payload, beside raw AES-256-GCM encrypt + decrypt of the
  same plaintext with the same cipher object (the AEAD's own cost, the floor sealing can
  approach); timed in interleaved repeats so a burst elsewhere on the machine hits both.
- one `tools/call` through each ASGI app (the bare endpoint, the lab's server), no sockets.

Each figure is the best of several repeats, timed in the measuring thread's own CPU time
(`time.thread_time`), so time the machine gave to other work while the loop ran does not
count: the least disturbed figure a shared machine gives. Compare figures from the same
run only.
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

from loadtest.bench.rounds import BENCH_RATE_PER_S, SHED_EVERY_UNITS, Round, rounds_for

#: Interleaved repeats of each in-process loop; the best is kept.
REPEATS = 5
#: The host the in-process requests name: one the lab's host check accepts.
HOST = "127.0.0.1:8000"


def _best_us(timers: dict[str, Callable[[], object]], number: int, repeat: int) -> dict[str, float]:
    """Microseconds per call of each timer: the best of `repeat` interleaved repeats."""
    best = dict.fromkeys(timers, float("inf"))
    for _ in range(repeat):
        for name, fn in timers.items():
            elapsed = timeit.timeit(fn, number=number, timer=time.thread_time)
            best[name] = min(best[name], elapsed / number * 1e6)
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


def in_process_microbench(number: int = 1000) -> dict[str, dict[str, float]]:
    """Microseconds per request of each round kind through each ASGI app, in this process.

    No network, no other process: the lab's own work per round (its cost over the bare
    endpoint's), with far less noise than a timed run over sockets.
    """
    from starlette.testclient import TestClient

    from loadtest.bench.peers.bare import app as bare_app
    from server.app import create_app
    from server.config import ServerConfig, StateKey

    lab_app = create_app(
        ServerConfig(
            state_keys=(StateKey("bench", os.urandom(32)),),
            jwt_secret=os.urandom(16).hex(),
            shed_every_units=SHED_EVERY_UNITS,
            # Every round comes from one principal, far faster than its default rate.
            requests_per_s_per_principal=BENCH_RATE_PER_S,
        )
    )
    with TestClient(lab_app, base_url=f"http://{HOST}") as client:
        rounds = rounds_for(f"http://{HOST}/mcp", http=client)
    out: dict[str, dict[str, float]] = {}
    for kind, timed in rounds.items():
        body = json.dumps(timed.body).encode()
        # The best of interleaved repeats, as for requestState above.
        bare_us = lab_us = float("inf")
        for _ in range(REPEATS):
            bare_us = min(bare_us, asyncio.run(_asgi_loop(bare_app, timed, body, number)) * 1e6)
            lab_us = min(lab_us, asyncio.run(_asgi_loop(lab_app, timed, body, number)) * 1e6)
        out[kind] = {"bare_us": bare_us, "lab_us": lab_us, "lab_own_us": lab_us - bare_us}
    out["shed"]["tool_us"] = crunch_round_us()
    return out


def crunch_round_us(number: int = 20_000) -> float:
    """Microseconds of `crunch`'s own work in one `shed` round: hashing its units.

    The bare endpoint does no such work; this is how much of the lab's cost in that round
    is the tool rather than the server.
    """
    from server.tools.crunch import crunch_start, crunch_units

    start = crunch_start()
    return _best_us({"unit": lambda: crunch_units(start, 0, SHED_EVERY_UNITS)}, number, REPEATS)[
        "unit"
    ]


def print_in_process(report: dict[str, dict[str, float]]) -> None:
    print(
        "in process, us per request (bare / lab / the lab's own work): "
        + ", ".join(
            f"{kind} {r['bare_us']:.0f} / {r['lab_us']:.0f} / {r['lab_own_us']:.0f}"
            for kind, r in report.items()
        )
    )
    if "tool_us" in report.get("shed", {}):
        print(
            f"of the shed round, crunch's own hashing ({SHED_EVERY_UNITS} unit per round): "
            f"{report['shed']['tool_us']:.1f} us"
        )


async def _asgi_loop(app: Any, timed: Round, body: bytes, number: int) -> float:
    headers = [(k.lower().encode(), v.encode()) for k, v in timed.headers.items()]
    headers += [(b"host", HOST.encode()), (b"content-length", str(len(body)).encode())]
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
    started = time.thread_time()
    for _ in range(number):
        await one()
    return (time.thread_time() - started) / number

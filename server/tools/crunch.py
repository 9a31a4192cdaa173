"""The seed's load-shedding tool: hash work that can move between replicas mid-call.

`crunch {units}` advances a SHA-256 chain, h = sha256(h || i) for i < units. Its
progress (i, h) lives in `ctx.state`, so an overloaded replica can hand the call to
another (`ctx.offload()`, MRTR only) and the result is the same digest. The chain itself
(`crunch_start`, `crunch_units`) is standard library only, so the load test can check a
result without the server.

A small crunch hashes on the event loop, a thousand units at a time with a turn for
other requests between; a larger one hands its slices to the replica's worker processes
(`server.core.cpu_pool`), so that the loop stays free. Either way the call looks at the
load, the shedding knob and its client between slices. `CRUNCH_MAX_UNITS` caps a call
(the input schema says so, and more units are refused as invalid params naming it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from typing import Any

from server.core.context import Context
from server.protocol.content import tool_result

#: Hash units `crunch` does on the loop between looks at the load and the shedding knob.
CRUNCH_CHUNK_UNITS = 1000
#: Hash units per millisecond of CPU, about, on the lab's machine: sizes the estimate
#: that decides between the loop and the workers.
CRUNCH_UNITS_PER_MS = 2000
#: The most units one call may ask for: about a second of CPU, as quote's cap.
CRUNCH_MAX_UNITS = 2_000_000
#: Units an attempt does before load may move it: every move costs a round trip and a
#: seal, so a replica sheds only after doing a useful slice (about 10 ms of hashing).
CRUNCH_MIN_SLICE_UNITS = 20_000
#: Units one slice handed to a worker process does: about the pool's `SLICE_MS` (5 ms),
#: so that other calls' small work waits little for a worker; load may move the call after
#: two slices, as on the loop.
CRUNCH_POOL_SLICE_UNITS = CRUNCH_MIN_SLICE_UNITS // 2


_START = hashlib.sha256(b"crunch").hexdigest()


def crunch_start() -> str:
    """The digest `crunch` starts from: sha256(b"crunch")."""
    return _START


def crunch_units(digest_hex: str, start: int, stop: int) -> str:
    """Advance the crunch chain over units [start, stop): h = sha256(h || i as 8-byte BE)."""
    h = bytes.fromhex(digest_hex)
    sha256 = hashlib.sha256
    for i in range(start, stop):
        h = sha256(h + i.to_bytes(8, "big")).digest()
    return h.hex()


async def crunch(ctx: Context) -> dict[str, Any]:
    units = ctx.arguments["units"]
    state = ctx.state
    done = state.setdefault("i", 0)
    digest = state.setdefault("h", crunch_start())
    trail = state.setdefault("replicas", [])
    trail.append(ctx.replica.replica_id)
    every = ctx.replica.shed_every_units
    pool = ctx.replica.cpu
    # What this attempt hashes: the rest of the chain, or one shedding slice of it.
    here = min(units - done, every) if every else units - done
    if pool is not None and pool.inline(here / CRUNCH_UNITS_PER_MS):
        pool = None
    done_here = 0
    with pool.share(ctx.principal) if pool is not None else contextlib.nullcontext():
        while done < units:
            stop = min(
                units, done + (CRUNCH_CHUNK_UNITS if pool is None else CRUNCH_POOL_SLICE_UNITS)
            )
            if every:
                stop = min(stop, done + every - done_here)
            if pool is None:
                digest = crunch_units(digest, done, stop)
            else:
                digest = await pool.run(
                    crunch_units, digest, done, stop, cost_ms=(stop - done) / CRUNCH_UNITS_PER_MS
                )
            done_here += stop - done
            done = stop
            state["i"], state["h"] = done, digest
            shed_by_load = done_here >= CRUNCH_MIN_SLICE_UNITS and ctx.overloaded()
            if done < units and ((every and done_here >= every) or shed_by_load):
                ctx.offload()
                # Still here: this call cannot move (a legacy stream, a task); next slice.
                done_here = 0
            if pool is None:
                await asyncio.sleep(0)
            if await ctx.abandoned():
                return tool_result(f"crunch abandoned after {done} units", is_error=True)
    return tool_result(
        f"crunch of {units} units: {digest}",
        structured={"digest": digest, "replicas": trail},
    )

"""The memory a held legacy call keeps alive while its user thinks.

A legacy call waiting for an answer is a suspended coroutine chain: the server's frames, the
tool's frame with its locals, the context with its arguments and state, the requests sent
and the stream's queue. `held_bytes` estimates that working set the way a heap profiler
would attribute it to the call: it walks every object reachable from the suspended frames
and the given roots, and adds `sys.getsizeof` of each object once. It follows coroutine
and generator frames (their locals), containers, and the attributes of plain objects; it
stops at what every call shares (modules, classes, functions, bound methods, the event loop,
and the objects named in `shared`: the server, its catalog, its store).

Left out, because no reference from the call reaches them: the HTTP server's per-connection
state (uvicorn's protocol object, socket buffers). The tests compare the estimate with the
growth of a replica's resident memory per held call, which includes them: for `get_weather`
about 13 KiB estimated against about 25 KiB measured (200 calls held).
"""

from __future__ import annotations

import asyncio
import collections
import sys
import types
from collections.abc import Iterable

#: Objects of these types are shared by every call, or are not the call's to count.
_SHARED_TYPES: tuple[type, ...] = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    asyncio.AbstractEventLoop,
)
_ATOMS: tuple[type, ...] = (str, bytes, bytearray, int, float, complex, bool, type(None))
#: A bound on the walk, so an unexpected reference to a large shared graph costs little.
MAX_OBJECTS = 20_000


def held_bytes(*roots: object, shared: Iterable[object] = ()) -> int:
    """Bytes held by `roots` (tasks, coroutines, generators, plain objects), shared excluded."""
    seen = {id(o) for o in shared}
    pending = list(roots)
    total = 0
    visited = 0
    while pending and visited < MAX_OBJECTS:
        obj = pending.pop()
        if id(obj) in seen or isinstance(obj, _SHARED_TYPES):
            continue
        seen.add(id(obj))
        visited += 1
        total += sys.getsizeof(obj, 0)
        if isinstance(obj, _ATOMS):
            continue
        own_bytes, references = _references(obj)
        total += own_bytes
        pending.extend(references)
    return total


def _references(obj: object) -> tuple[int, list[object]]:
    """What `obj` keeps alive for the same call: bytes of its own, and objects to visit.

    Names (local variable names, attribute names) are interned and shared by every call,
    so only the values of frames and attribute dictionaries are visited. A frame's locals
    are read through `f_locals` without counting the dictionary that reading them makes.
    """
    if isinstance(obj, asyncio.Task):
        return 0, [obj.get_coro()]
    if isinstance(obj, asyncio.Future):
        # A future's callbacks and loop are the scheduler's; its result is the call's.
        done = obj.done() and not obj.cancelled() and obj.exception() is None
        return 0, [obj.result()] if done else []
    if isinstance(obj, types.CoroutineType):
        return 0, [obj.cr_frame, obj.cr_await]
    if isinstance(obj, types.AsyncGeneratorType):
        return 0, [obj.ag_frame, obj.ag_await]
    if isinstance(obj, types.GeneratorType):
        return 0, [obj.gi_frame, obj.gi_yieldfrom]
    if isinstance(obj, types.FrameType):
        return 0, list(obj.f_locals.values())
    if isinstance(obj, dict):
        return 0, [*obj.keys(), *obj.values()]
    if isinstance(obj, list | tuple | set | frozenset | collections.deque):
        return 0, list(obj)
    own_bytes = 0
    found: list[object] = []
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        own_bytes += sys.getsizeof(attributes, 0)
        found.extend(attributes.values())
    for klass in type(obj).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                value = getattr(obj, slot, None)
                if value is not None:
                    found.append(value)
    return own_bytes, found

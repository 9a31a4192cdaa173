"""requestState: what a server hands the client to carry between rounds, sealed so it can't lie.

The client is an untrusted courier. A sealed state is AES-256-GCM ciphertext of a small JSON
document, so the client can neither read nor change it. Inside, besides the tool's own
state and the answers it already collected, the server binds what the released spec asks
for: the principal it was minted for, an expiry, and the originating request (method, the
tool/prompt/resource name and a digest of its arguments). On receipt every binding is
checked; any mismatch is a JSON-RPC invalid-params error, never a silent success.

Token format (ASCII): ``<key id>.<base64(nonce || ciphertext || tag)>``.
The key id selects the key to open with, so replicas can rotate keys during a rolling
upgrade: the newest key seals, every configured key opens.

Sealing sits on the hot path of every round that carries state, so it costs little more
than the AEAD itself: one cipher object per key, built once; base64 by pybase64's SIMD
codec, which is several times faster than binascii's (the text step used to cost more than
the encryption); nonces drawn from the OS in blocks; no copies beyond the one
concatenation of nonce and ciphertext.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import orjson
import pybase64
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from server.config import StateKey

NONCE_BYTES = 12
#: Nonces drawn from the OS per system call: a call costs as much as the AES-GCM of a
#: kilobyte, and a block of this many makes it nearly free per seal.
NONCE_BLOCK = 256
# Bound into the AEAD so a ciphertext from some other use of the same key never opens here.
_AAD_PREFIX = b"mrtr-lab/requestState/v1/"


#: Set in a sealed document written by the standard library's json (see `_dump`).
_WIDE_INTEGERS = "w"


def _dump(document: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(document)
    except TypeError:
        # Integers beyond 64 bits, which orjson refuses to write and would read back as
        # floats: the standard library writes them, and the document says so for `_load`.
        document[_WIDE_INTEGERS] = 1
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def _load(plaintext: bytes) -> Any:
    try:
        document = orjson.loads(plaintext)
    except ValueError:  # a number orjson cannot read at all
        return json.loads(plaintext)
    return json.loads(plaintext) if _WIDE_INTEGERS in document else document


class _Nonces:
    """Fresh random 96-bit AES-GCM nonces, taken from `os.urandom` a block at a time.

    Each nonce is handed out once: `list.pop` is atomic, so threads never share one, and a
    forked child drops what its parent drew, so two processes never share one either. A
    GCM nonce need not be secret, only never repeated under a key; random ones leave that
    to chance at 2**-96 per pair.
    """

    def __init__(self) -> None:
        self._pool: list[bytes] = []
        os.register_at_fork(after_in_child=self._pool.clear)

    def take(self) -> bytes:
        try:
            return self._pool.pop()
        except IndexError:
            block = os.urandom(NONCE_BYTES * NONCE_BLOCK)
            fresh = [block[i : i + NONCE_BYTES] for i in range(0, len(block), NONCE_BYTES)]
            nonce = fresh.pop()
            self._pool.extend(fresh)
            return nonce


_NONCES = _Nonces()


_new_tuple = tuple.__new__


class StateError(Exception):
    """A requestState that failed to open or to match the request; `reason` names why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Origin(NamedTuple):
    """What a requestState is bound to: who asked, with which method, for what, with what."""

    principal: str
    method: str
    name: str
    arguments_digest: str

    @classmethod
    def of(cls, principal: str, method: str, name: str, arguments: Any) -> Origin:
        """The origin of a request with these `arguments` (their digest is taken here)."""
        # tuple.__new__ directly: a NamedTuple's own __new__ is a Python function.
        return _new_tuple(cls, (principal, method, name, arguments_digest(arguments)))


#: An empty BLAKE2b-128, copied for each digest: a copy costs less than setting one up
#: from its keyword parameters.
_BLAKE2B_128 = hashlib.blake2b(digest_size=16)


def arguments_digest(arguments: Any) -> str:
    """A short, order-independent digest of a request's salient params (its arguments).

    BLAKE2b with a 128-bit output over the arguments' JSON with sorted keys, in hex. It is
    computed twice for most rounds that carry state (seal, then open on the retry), and
    BLAKE2b is built into Python: about half what SHA-256 through OpenSSL plus base64
    cost, at the same 128 bits the truncated SHA-256 gave.
    """
    try:
        canonical = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers beyond 64 bits
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":")).encode()
    digest = _BLAKE2B_128.copy()
    digest.update(canonical)
    return digest.hexdigest()


class OpenedState(NamedTuple):
    """The contents of a requestState that opened and matched its request."""

    key_id: str
    round: int
    answers: dict[str, Any]
    tool_state: dict[str, Any]
    #: The questions the round that sealed it asked (None for an older state).
    asked: set[str] | None = None
    #: The state's AES-GCM nonce: drawn at random for each seal, so it names this one
    #: state (what a single-use check records).
    nonce: bytes = b""
    #: How long the state stays valid from now.
    seconds_left: float = 0.0


class StateSealer:
    """Seals and opens requestState with a ring of AES-256-GCM keys.

    `clock` is injectable so tests can expire a state without waiting.
    """

    def __init__(
        self,
        keys: Iterable[StateKey],
        ttl_s: float,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        keys = tuple(keys)
        if not keys:
            raise ValueError("a StateSealer needs at least one key")
        self._sealing_id = keys[0].key_id
        self._ciphers = {k.key_id: AESGCM(k.key_bytes) for k in keys}
        self._aad = {k.key_id: _AAD_PREFIX + k.key_id.encode() for k in keys}
        # What every seal uses, looked up once: the newest key's cipher, AAD and token prefix.
        self._sealing_cipher = self._ciphers[self._sealing_id]
        self._sealing_aad = self._aad[self._sealing_id]
        self._token_prefix = self._sealing_id + "."
        self._ttl_s = ttl_s
        self._clock = clock

    @property
    def sealing_key_id(self) -> str:
        """Id of the key new states are sealed with."""
        return self._sealing_id

    def seal(
        self,
        origin: Origin,
        *,
        round: int,
        answers: dict[str, Any],
        tool_state: dict[str, Any],
        asked: Iterable[str] = (),
    ) -> str:
        """Seal the state of one logical request after `round` rounds.

        `asked` names the questions this round asks, so the retry can tell an answer to
        them from keys nobody asked for.
        """
        document = {
            "sub": origin.principal,
            "exp": int(self._clock() + self._ttl_s),
            "m": origin.method,
            "n": origin.name,
            "d": origin.arguments_digest,
            "r": round,
            "a": answers,
            "s": tool_state,
            "q": [*asked],
        }
        nonce = _NONCES.take()
        sealed = self._sealing_cipher.encrypt(nonce, _dump(document), self._sealing_aad)
        return self._token_prefix + pybase64.b64encode_as_string(nonce + sealed)

    def open(self, token: Any, origin: Origin) -> OpenedState:
        """Open a state a client sent back and check it belongs to this request."""
        if not isinstance(token, str) or not token:
            raise StateError("malformed", "requestState must be a non-empty string")
        kid, dot, body = token.partition(".")
        if not dot:
            raise StateError("malformed", "requestState is not a sealed state of this server")
        cipher = self._ciphers.get(kid)
        if cipher is None:
            raise StateError("unknown_key", "requestState was sealed with an unknown key")
        try:
            # Validating: lenient decoding would skip stray characters and ignore text
            # appended after the padding; this rejects both, as binascii's strict mode does.
            raw = pybase64.b64decode(body, None, True)  # validate=True, passed by position
        except (binascii.Error, ValueError) as exc:
            raise StateError("malformed", "requestState is not valid base64") from exc
        if len(raw) <= NONCE_BYTES + 16:
            raise StateError("malformed", "requestState is too short")
        try:
            plaintext = cipher.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], self._aad[kid])
        except InvalidTag as exc:
            raise StateError("tampered", "requestState failed its integrity check") from exc
        document = _load(plaintext)
        if document["sub"] != origin.principal:
            raise StateError("wrong_principal", "requestState belongs to another principal")
        if (
            document["m"] != origin.method
            or document["n"] != origin.name
            or document["d"] != origin.arguments_digest
        ):
            raise StateError(
                "wrong_request", "requestState was issued for a different request or arguments"
            )
        # Checked last: only a state that is this request's own and otherwise sound is
        # "expired", which the server answers by asking again rather than with an error.
        if document["exp"] < self._clock():
            raise StateError("expired", "requestState has expired; start the request again")
        asked = document.get("q")  # absent from states sealed before it was recorded
        return _new_tuple(
            OpenedState,
            (
                kid,
                document["r"],
                document["a"],
                document["s"],
                None if asked is None else set(asked),
                raw[:NONCE_BYTES],
                document["exp"] - self._clock(),
            ),
        )

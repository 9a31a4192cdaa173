"""The door of /mcp: which requests may come in at all, and on whose behalf.

Every request to /mcp passes here first, whatever its method or era (POST and DELETE
alike):

- its `Mcp-*` headers, and those that name a host, an origin or a caller, appear once (a
  repeated routing header could pass a gateway on its first copy and the server on its
  last);
- a browser page's `Origin` must be allowed: one listed in `allowed_origins`, or one on
  this machine while the server is bound to loopback. `Origin: null` (sandboxed frames,
  files) is never allowed. Clients that are not browsers send no Origin;
- on a loopback bind, `Host` must name this machine (DNS-rebinding protection);
- a replica still on the public development key or secret serves this machine only: a
  request from another machine, or relayed by a proxy (`X-Forwarded-For`, `Forwarded`,
  `X-Real-IP`), is refused, whatever address the replica is bound to;
- an `Authorization` header, when present, must prove a principal; with `require_auth`
  (the default beyond loopback) it must be present.

`/healthz` and `/metrics` pass a smaller door (`admit_probe`): a `Host` naming another
machine is refused on a loopback bind as above (a health checker that sends no `Host` is
no browser, and passes), and `/metrics` asks for its own bearer token when one is set.

A refusal is a finished HTTP response: 400, 403, or 401 with `WWW-Authenticate`.
"""

from __future__ import annotations

import hmac
import ipaddress
import time
from collections.abc import Iterable, Mapping

from starlette.responses import Response
from starlette.types import Scope

from server.protocol import jsonrpc
from server.protocol.jsonrpc import RpcError, too_many_requests
from server.transport.auth import ANONYMOUS, Authenticator, AuthError
from server.transport.streamable import (
    RepeatedHeader,
    error_response,
    is_local_host,
    is_loopback_origin,
    request_headers,
)


class Refused(Exception):
    """A request the guard turns away, with the response that says why."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def normal_origin(origin: str) -> str:
    """An origin as compared: lowercase, without surrounding spaces or a trailing slash."""
    return origin.strip().lower().rstrip("/")


class Guard:
    """Admits requests to /mcp: headers once, Origin, Host, then the principal."""

    def __init__(
        self,
        authenticator: Authenticator,
        *,
        loopback_only: bool,
        allowed_origins: Iterable[str] = (),
        require_auth: bool = False,
        rate_per_s: float = 0.0,
        public_keys: Iterable[str] = (),
        metrics_token: str = "",
    ) -> None:
        self.authenticator = authenticator
        self.rate = RateLimit(rate_per_s) if rate_per_s > 0 else None
        self.loopback_only = loopback_only
        self.allowed_origins = frozenset(normal_origin(o) for o in allowed_origins)
        self.require_auth = require_auth
        #: The secrets still on their public development values (by environment name),
        #: which may serve this machine only; empty when none is, or when that is allowed.
        self.public_keys = tuple(public_keys)
        self.metrics_token = metrics_token

    def admit_request(self, scope: Scope) -> tuple[dict[str, str], str]:
        """The headers of the request in ASGI `scope` and the principal it acts for.

        Raises `Refused`.
        """
        try:
            headers = request_headers(scope)
        except RepeatedHeader as exc:
            raise Refused(_refusal(400, f"Bad request: {exc}")) from None
        if self.public_keys and not from_this_machine(scope, headers):
            raise Refused(
                _refusal(
                    403,
                    "Forbidden: this server runs with the public development "
                    f"{' and '.join(self.public_keys)}, which anyone can forge state and "
                    "tokens with, so it serves this machine only",
                )
            )
        principal = self.admit(headers)
        if self.rate is not None:
            wait_s = self.rate.wait_s(principal)
            if wait_s > 0:
                # A retry loop gone wrong (or abuse) is throttled here, before any work.
                rate = self.rate.rate_per_s
                refusal = too_many_requests(
                    f"Too many requests: slow down (limit {rate:g} per second)", round(rate)
                )
                response = error_response(None, refusal)
                response.headers["Retry-After"] = str(max(1, round(wait_s)))
                raise Refused(response)
        return headers, principal

    def admit(self, headers: Mapping[str, str]) -> str:
        """The principal a request acts for; raises `Refused` when it may not come in."""
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(origin):
            raise Refused(_refusal(403, "Forbidden origin"))
        if self.loopback_only and not is_local_host(headers):
            raise Refused(_refusal(403, "Forbidden host"))
        authorization = headers.get("authorization")
        if not authorization:
            if self.require_auth:
                raise Refused(_unauthorized("Unauthorized: a bearer token is required", None))
            return ANONYMOUS
        try:
            return self.authenticator.principal(authorization)
        except AuthError as exc:
            raise Refused(_unauthorized(f"Unauthorized: {exc}", "invalid_token")) from None

    def admit_probe(self, scope: Scope, *, metrics: bool = False) -> None:
        """Let a request to /healthz (or, with `metrics`, /metrics) in; raises `Refused`."""
        try:
            headers = request_headers(scope)
        except RepeatedHeader as exc:
            raise Refused(_refusal(400, f"Bad request: {exc}")) from None
        if self.loopback_only and "host" in headers and not is_local_host(headers):
            raise Refused(_refusal(403, "Forbidden host"))
        if metrics and self.metrics_token:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            proven = scheme.lower() == "bearer" and hmac.compare_digest(
                token.strip().encode(), self.metrics_token.encode()
            )
            if not proven:
                raise Refused(_unauthorized("Unauthorized: /metrics needs its token", None))

    def origin_allowed(self, origin: str) -> bool:
        """Whether a page at `origin` may call this server."""
        normal = normal_origin(origin)
        if normal == "null":
            return False
        if normal in self.allowed_origins:
            return True
        return self.loopback_only and is_loopback_origin(normal)


#: Headers by which a proxy says whom it relays a request for.
RELAY_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")


def from_this_machine(scope: Scope, headers: Mapping[str, str]) -> bool:
    """Whether a request comes from this machine itself: a loopback peer (or a Unix socket),
    and no proxy saying it relays someone else's."""
    if not headers.keys().isdisjoint(RELAY_HEADERS):
        return False
    client = scope.get("client")
    if not client:
        return True  # a Unix socket: only this machine reaches it
    peer = client[0]
    local = _loopback_peers.get(peer)
    if local is None:
        # Parsing an address costs more than the rest of the guard: each peer once.
        if len(_loopback_peers) > 1024:
            _loopback_peers.clear()
        local = _loopback_peers[peer] = _is_loopback_address(peer)
    return local


#: Whether each peer address seen is a loopback one (bounded: cleared past 1,024 peers).
_loopback_peers: dict[str, bool] = {}


def _is_loopback_address(peer: str) -> bool:
    try:
        return ipaddress.ip_address(peer).is_loopback
    except ValueError:
        # A name, not an address: a client in this very process (Starlette's TestClient
        # calls itself "testclient"). A network server gives the peer's address.
        return True


class RateLimit:
    """A token bucket per principal: `rate_per_s` on average, bursts of twice that."""

    def __init__(self, rate_per_s: float, *, max_principals: int = 10_000) -> None:
        self.rate_per_s = rate_per_s
        self.burst = 2 * rate_per_s
        self.max_principals = max_principals
        self._buckets: dict[str, tuple[float, float]] = {}

    def wait_s(self, principal: str) -> float:
        """0 when `principal` may send now (a token is spent), else how long to wait."""
        now = time.monotonic()
        tokens, since = self._buckets.get(principal, (self.burst, now))
        tokens = min(self.burst, tokens + (now - since) * self.rate_per_s)
        if tokens < 1:
            self._buckets[principal] = (tokens, now)
            return (1 - tokens) / self.rate_per_s
        if len(self._buckets) >= self.max_principals and principal not in self._buckets:
            self._buckets.clear()  # forget idle principals rather than grow without bound
        self._buckets[principal] = (tokens - 1, now)
        return 0.0


def _refusal(status: int, message: str) -> Response:
    return error_response(None, RpcError(jsonrpc.INVALID_REQUEST, message, http_status=status))


def _unauthorized(message: str, error: str | None) -> Response:
    response = _refusal(401, message)
    challenge = f'Bearer error="{error}"' if error else 'Bearer realm="mcp"'
    response.headers["WWW-Authenticate"] = challenge
    return response

"""The door of /mcp: which requests may come in at all, and on whose behalf.

Every request to /mcp passes here first, whatever its method or era (POST and DELETE
alike): Host and Origin must name this machine on a loopback bind (DNS-rebinding
protection), and an `Authorization` header, when present, must prove a principal. A
refusal is a finished HTTP response: 403, or 401 with `WWW-Authenticate`.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import Response

from server.protocol import jsonrpc
from server.protocol.jsonrpc import RpcError
from server.transport.auth import Authenticator, AuthError
from server.transport.streamable import error_response, is_local_request


class Refused(Exception):
    """A request the guard turns away, with the response that says why."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


class Guard:
    """Admits requests to /mcp: checks Host and Origin, then finds the principal."""

    def __init__(self, authenticator: Authenticator, *, loopback_only: bool) -> None:
        self.authenticator = authenticator
        self.loopback_only = loopback_only

    def admit(self, headers: Mapping[str, str]) -> str:
        """The principal a request acts for; raises `Refused` when it may not come in."""
        if self.loopback_only and not is_local_request(headers):
            error = RpcError(jsonrpc.INVALID_REQUEST, "Forbidden host or origin", http_status=403)
            raise Refused(error_response(None, error))
        try:
            return self.authenticator.principal(headers.get("authorization"))
        except AuthError as exc:
            error = RpcError(jsonrpc.INVALID_REQUEST, f"Unauthorized: {exc}", http_status=401)
            response = error_response(None, error)
            response.headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
            raise Refused(response) from None

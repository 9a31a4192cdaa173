"""Running one method as the replica runs every method, whichever era asked for it.

The count of requests in flight (load shedding and `/healthz` read it), the JSON-RPC
response around the result, an unexpected exception turned into a bare "Internal error"
(the log keeps the details; the client learns nothing internal), and the outcome counted
in `/metrics`.
"""

from __future__ import annotations

import logging
from typing import Any

from server.core.call import Call, Method
from server.core.metrics import ServerMetrics
from server.protocol import jsonrpc
from server.protocol.jsonrpc import RpcError

log = logging.getLogger("server")


class Dispatcher:
    """Runs methods for one replica, counting them in flight and in its metrics."""

    def __init__(self, metrics: ServerMetrics) -> None:
        self.metrics = metrics
        self.in_flight = 0

    async def serve(self, call: Call, method: Method) -> dict[str, Any]:
        """Run one method and count it; the JSON-RPC response (errors raise `RpcError`)."""
        rid = call.message.id
        self.in_flight += 1
        try:
            result = await method(call)
        except RpcError:
            raise
        except Exception:
            log.exception("internal error in %s", call.message.method)
            self.metrics.count_request(call.message.method, "error")
            error = RpcError(jsonrpc.INTERNAL_ERROR, "Internal error", http_status=500)
            raise error from None
        finally:
            self.in_flight -= 1
        self.metrics.count_request(call.message.method, result["resultType"])
        return jsonrpc.result_response(rid, result)

"""How long the lab waits for a whole reply of a server it did not start.

httpx's timeouts bound each read, not a reply: a server that sends its head and then a
byte every few seconds is never timed out, and `measure --target` waited on one for ever.
Here a reply, head and body, must be complete within a deadline counted from the moment
its request was sent; past it the reply fails as a read timeout (`httpx.ReadTimeout`, a
transport error), which the lab's flows count as a call the server lost, and discovery as
a server that does not answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx

#: Seconds a target has to finish one reply (a whole call's stream, in the 2025-11-25 era).
REPLY_DEADLINE_S = 60.0
#: Seconds one read may wait for the next byte.
READ_TIMEOUT_S = 10.0


class _DeadlineStream(httpx.SyncByteStream):
    """A reply's body that fails once its deadline passes, however the bytes trickle."""

    def __init__(
        self, inner: httpx.SyncByteStream, request: httpx.Request, ends: float, deadline_s: float
    ) -> None:
        self.inner = inner
        self.request = request
        self.ends = ends
        self.deadline_s = deadline_s

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if time.monotonic() > self.ends:
                raise httpx.ReadTimeout(outran(self.request, self.deadline_s), request=self.request)
            yield chunk

    def close(self) -> None:
        self.inner.close()


def outran(request: httpx.Request, deadline_s: float) -> str:
    """Why a reply failed, naming the server: it did not end within `deadline_s`."""
    return (
        f"the server at {request.url.scheme}://{request.url.netloc.decode()} did not finish "
        f"its reply within {deadline_s:g} s: the server's reply outran its deadline"
    )


class DeadlineTransport(httpx.BaseTransport):
    """An HTTP transport whose replies end within `deadline_s` of their request."""

    def __init__(self, deadline_s: float = REPLY_DEADLINE_S) -> None:
        self.deadline_s = deadline_s
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        ends = time.monotonic() + self.deadline_s
        response = self.inner.handle_request(request)
        stream = response.stream
        assert isinstance(stream, httpx.SyncByteStream)
        response.stream = _DeadlineStream(stream, request, ends, self.deadline_s)
        return response

    def close(self) -> None:
        self.inner.close()


def deadline_client(
    deadline_s: float = REPLY_DEADLINE_S, read_timeout_s: float = READ_TIMEOUT_S
) -> httpx.Client:
    """An httpx client whose every reply ends within `deadline_s` (and each read within
    `read_timeout_s`, or the deadline when shorter)."""
    return httpx.Client(
        transport=DeadlineTransport(deadline_s), timeout=min(read_timeout_s, deadline_s)
    )

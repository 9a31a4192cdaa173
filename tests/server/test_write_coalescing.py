"""A response's head and body leave the replica in one write; streams are not held back.

uvicorn's own HTTP protocols (httptools and h11) run here on a transport that records what
reaches it, so each test sees exactly the writes the socket would get.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from server.transport.coalescing import with_coalesced_writes
from server.transport.wire_limits import WireLimits, protocol_class, with_wire_limits

LIMITS = WireLimits(
    header_timeout_s=5.0,
    max_header_bytes=16 * 1024,
    max_header_count=100,
    body_timeout_s=5.0,
    body_min_rate_bytes_per_s=1024,
    max_body_bytes=1024 * 1024,
)
REQUEST = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"


class RecordingTransport(asyncio.Transport):
    """A socket's transport that keeps every write and close, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, bytes]] = []
        self.closing = False
        self.protocol: Any = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closing, "written after close"
        self.events.append(("write", bytes(data)))

    def close(self) -> None:
        self.events.append(("close", b""))
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_protocol(self) -> Any:
        return self.protocol

    def get_write_buffer_size(self) -> int:
        return 0

    @property
    def writes(self) -> list[bytes]:
        return [data for kind, data in self.events if kind == "write"]


async def json_app(scope: dict, receive: Any, send: Any) -> None:
    """Answers like POST /mcp: a head with a content-length, then the body, in one step."""
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    await receive()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def connect(app: Any, http: str) -> tuple[asyncio.Protocol, RecordingTransport]:
    """The replica's protocol, as `python -m server` composes it, on a recording transport."""
    config = uvicorn.Config(app, http=http, lifespan="off", log_level="warning")
    config.load()
    protocol_type = with_wire_limits(with_coalesced_writes(protocol_class(http)), LIMITS)
    protocol = protocol_type(config=config, server_state=ServerState(), app_state={})
    transport = RecordingTransport()
    transport.protocol = protocol
    protocol.connection_made(transport)
    return protocol, transport


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_a_json_answer_goes_out_as_one_write_holding_head_and_body(http: str) -> None:
    async def scenario() -> None:
        protocol, transport = connect(json_app, http)
        protocol.data_received(REQUEST)
        await settle()
        assert len(transport.writes) == 1
        head, _, body = transport.writes[0].partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert body == b'{"jsonrpc":"2.0","id":1,"result":{}}'
        protocol.connection_lost(None)

    asyncio.run(scenario())


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_requests_on_one_connection_get_their_answers_in_order(http: str) -> None:
    async def scenario() -> None:
        protocol, transport = connect(json_app, http)
        for _ in range(3):
            protocol.data_received(REQUEST)
            await settle()
        assert len(transport.writes) == 3
        assert all(w.startswith(b"HTTP/1.1 200") for w in transport.writes)
        protocol.connection_lost(None)

    asyncio.run(scenario())


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_a_stream_sends_its_head_and_each_event_without_waiting_for_the_next(
    http: str,
) -> None:
    async def scenario() -> None:
        event_ready = asyncio.Event()

        async def stream_app(scope: dict, receive: Any, send: Any) -> None:
            await receive()
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await event_ready.wait()
            await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
            await event_ready.wait()
            await send({"type": "http.response.body", "body": b""})

        protocol, transport = connect(stream_app, http)
        protocol.data_received(REQUEST)
        await settle()
        # The app is waiting for its first event: the head has gone out anyway.
        assert len(transport.writes) == 1
        assert transport.writes[0].startswith(b"HTTP/1.1 200")
        event_ready.set()
        await settle()
        assert b"data: 1\n\n" in b"".join(transport.writes[1:])
        protocol.connection_lost(None)

    asyncio.run(scenario())


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_an_answer_before_a_close_is_sent_before_the_connection_closes(http: str) -> None:
    async def scenario() -> None:
        protocol, transport = connect(json_app, http)
        protocol.data_received(REQUEST.replace(b"Host:", b"Connection: close\r\nHost:"))
        await settle()
        kinds = [kind for kind, _ in transport.events]
        assert kinds == ["write", "close"]
        assert transport.writes[0].endswith(b'{"jsonrpc":"2.0","id":1,"result":{}}')

    asyncio.run(scenario())


def test_the_coalescing_transport_passes_everything_else_to_the_socket() -> None:
    async def scenario() -> None:
        from server.transport.coalescing import CoalescingTransport

        raw = RecordingTransport()
        transport = CoalescingTransport(raw)
        transport.write(b"a")
        transport.write(b"b")
        assert raw.writes == []
        assert transport.get_write_buffer_size() == 2
        assert transport.get_extra_info("peername", "none") == "none"
        await settle()
        assert raw.writes == [b"ab"]
        transport.write(b"c")
        transport.close()
        assert raw.events[1:] == [("write", b"c"), ("close", b"")]

    asyncio.run(scenario())

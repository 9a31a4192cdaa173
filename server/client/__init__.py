"""The reference clients: MRTR (2026-07-28), tasks, and legacy SSE elicitation (2025-11-25).

They speak the protocol over httpx and import nothing of the server but `server.protocol`.
The protocol steps (`Exchange`, `TaskFlow`, `LegacySession`, `LegacyExchange`) hold no
I/O, so the load test's users drive them with their own HTTP client.
"""

from server.client.exchange import Exchange
from server.client.handlers import Handlers, accept, decline, sampled
from server.client.legacy import AsyncLegacyClient, LegacyClient
from server.client.legacy_session import LegacyExchange, LegacySession
from server.client.mrtr import AsyncMrtrClient, MrtrClient
from server.client.options import ClientOptions
from server.client.replies import (
    SERVED_BY_HEADER,
    McpError,
    Round,
    TooManyRounds,
    parse_body,
    reply_message,
    result_of,
    text_of,
)
from server.client.taskflow import EXTENSION, SEED, TaskFlow, task_capabilities
from server.protocol.headers import SESSION_HEADER

__all__ = [
    "EXTENSION",
    "SEED",
    "SERVED_BY_HEADER",
    "SESSION_HEADER",
    "AsyncLegacyClient",
    "AsyncMrtrClient",
    "ClientOptions",
    "Exchange",
    "Handlers",
    "LegacyClient",
    "LegacyExchange",
    "LegacySession",
    "McpError",
    "MrtrClient",
    "Round",
    "TaskFlow",
    "TooManyRounds",
    "accept",
    "decline",
    "parse_body",
    "reply_message",
    "result_of",
    "sampled",
    "task_capabilities",
    "text_of",
]

"""The reference clients: MRTR (2026-07-28), tasks, and legacy SSE elicitation (2025-11-25).

They speak the protocol over httpx and import nothing of the server but `server.protocol`.
"""

from server.client.legacy import (
    SESSION_HEADER,
    AsyncLegacyClient,
    LegacyClient,
    LegacyExchange,
    LegacySession,
)
from server.client.mrtr import (
    EXTENSION,
    SEED,
    AsyncMrtrClient,
    Exchange,
    Handlers,
    McpError,
    MrtrClient,
    Round,
    TaskFlow,
    TooManyRounds,
    accept,
    decline,
    parse_body,
    result_of,
    sampled,
    task_capabilities,
    text_of,
)

__all__ = [
    "EXTENSION",
    "SEED",
    "SESSION_HEADER",
    "AsyncLegacyClient",
    "AsyncMrtrClient",
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
    "result_of",
    "sampled",
    "task_capabilities",
    "text_of",
]

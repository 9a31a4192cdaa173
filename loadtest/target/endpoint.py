"""An MCP endpoint the lab did not start, discovered once: the eras it speaks, its tools
with their `inputSchema`, and how the lab's users authenticate to it.

`discover(url, auth)` asks `server/discover` (2026-07-28) and `initialize` (2025-11-25,
whose answer may come as JSON or as an SSE stream, as the server chooses), then lists the
tools (`tools/list`, page by page) in the first era that answers. What cannot be a target
is refused in one line (`TargetError`): a URL nothing answers at (or that trickles its
replies past `DISCOVERY_TIMEOUT_S`), one that answers but not
as an MCP server (an HTML page, a 404, a body that is not JSON-RPC), or a server that
speaks neither era.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from loadtest.target.reply_deadline import deadline_client
from server.client import LegacyClient, McpError, MrtrClient, reply_message
from server.protocol.headers import META_SERVER_INFO
from server.protocol.versions import LEGACY_VERSION, MODERN_VERSION

#: The eras a target may speak, newest first.
ERAS = (MODERN_VERSION, LEGACY_VERSION)
#: Pages of `tools/list` read at most (a server that never ends its cursor is cut here).
MAX_TOOL_PAGES = 100
#: How long one request of the discovery may take, its whole reply included.
DISCOVERY_TIMEOUT_S = 10.0


class TargetError(ValueError):
    """What makes a URL, a tool or a workload file unfit to measure, said in one line."""


@dataclass(frozen=True)
class Auth:
    """How the lab's users authenticate to a target: anonymously, with one bearer token,
    or with one token per simulated user (a file of tokens, one a line)."""

    tokens: tuple[str | None, ...] = (None,)

    @classmethod
    def from_options(cls, tokens: list[str] | None, tokens_file: str | None) -> Auth:
        """The auth the command line states: `--token` (repeatable) or `--tokens-file`."""
        found: list[str | None] = list(tokens or [])
        if tokens_file:
            try:
                lines = Path(tokens_file).read_text().splitlines()
            except OSError as error:
                raise TargetError(f"--tokens-file {tokens_file}: {error.strerror}") from None
            found += [line.strip() for line in lines if line.strip()]
            if not found:
                raise TargetError(f"--tokens-file {tokens_file} holds no token")
        return cls(tuple(found) or (None,))

    @property
    def token(self) -> str | None:
        """The first user's token (the one a single client uses)."""
        return self.tokens[0]

    def for_user(self, index: int) -> str | None:
        """The token of simulated user `index` (the tokens go round)."""
        return self.tokens[index % len(self.tokens)]


@dataclass(frozen=True)
class TargetTool:
    """One tool a target lists: its name, what it says it does, and its `inputSchema`."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Target:
    """An MCP endpoint as discovered: where it is, who calls it, the eras it speaks and
    the tools it lists."""

    url: str
    auth: Auth
    eras: tuple[str, ...]
    tools: dict[str, TargetTool] = field(default_factory=dict)
    server_name: str = ""

    def tool(self, name: str) -> TargetTool:
        """The tool called `name`, or a refusal naming the tools the target lists."""
        if name not in self.tools:
            listed = ", ".join(sorted(self.tools)) or "none"
            raise TargetError(f"{self.url} lists no tool {name!r}; it lists: {listed}")
        return self.tools[name]

    def eras_for(self, wanted: str) -> tuple[str, ...]:
        """The eras `--era` asks for (`both`: every era spoken), or a refusal if the
        target does not speak the one asked for."""
        if wanted == "both":
            return self.eras
        if wanted not in self.eras:
            raise TargetError(
                f"{self.url} does not speak {wanted}; it speaks {', '.join(self.eras)}"
            )
        return (wanted,)


def discover(url: str, auth: Auth | None = None) -> Target:
    """The target at `url`: its eras and tools, or a `TargetError` saying why it is none."""
    auth = auth or Auth()
    probe = _probe(url, auth.token)
    eras: list[str] = []
    tools: list[dict[str, Any]] | None = None
    name = ""
    errors: list[str] = []
    try:
        with (
            deadline_client(DISCOVERY_TIMEOUT_S) as http,
            MrtrClient(url, token=auth.token, http=http) as client,
        ):
            found = client.discover()
            eras.append(MODERN_VERSION)
            info = (found.get("_meta") or {}).get(META_SERVER_INFO) or {}
            name = str(info.get("name", ""))
            tools = list(_pages(lambda cursor: client.request("tools/list", cursor).result))
    except (McpError, httpx.HTTPError, ValueError, KeyError) as error:
        errors.append(f"{MODERN_VERSION}: {error}")
    try:
        with (
            deadline_client(DISCOVERY_TIMEOUT_S) as http,
            LegacyClient(url, token=auth.token, http=http) as legacy,
        ):
            eras.append(LEGACY_VERSION)
            name = name or str(legacy.session.server_info.get("name", ""))
            if tools is None:
                tools = list(_pages(lambda cursor: legacy.request("tools/list", cursor).result))
    except (McpError, httpx.HTTPError, ValueError, KeyError) as error:
        errors.append(f"{LEGACY_VERSION}: {error}")
    if not eras:
        if probe:
            raise TargetError(f"{url} is not an MCP server: {probe}")
        raise TargetError(f"{url} speaks neither {' nor '.join(ERAS)} ({'; '.join(errors)})")
    return Target(
        url=url,
        auth=auth,
        eras=tuple(eras),
        tools={t["name"]: _tool(t) for t in tools or []},
        server_name=name,
    )


def _probe(url: str, token: str | None) -> str:
    """Why `url` is not an MCP endpoint at all (an empty string when it may be one): one
    plain `ping` POST, whose reply must be a JSON-RPC message of some kind."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **({"Authorization": f"Bearer {token}"} if token else {}),
    }
    body = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
    try:
        with (
            deadline_client(DISCOVERY_TIMEOUT_S) as http,
            http.stream("POST", url, json=body, headers=headers) as response,
        ):
            kind = response.headers.get("content-type", "").split(";")[0] or "no content type"
            if kind == "text/event-stream":
                return ""  # an MCP stream; its messages are read by the eras' clients
            content = response.read()
    except httpx.HTTPError as error:
        raise TargetError(f"cannot reach {url}: {type(error).__name__}: {error}") from None
    if response.status_code in (401, 403):
        raise TargetError(f"{url} refused the lab's credentials (HTTP {response.status_code})")
    message = reply_message(kind, content)
    if message is not None and message.get("jsonrpc") == "2.0":
        return ""
    return f"HTTP {response.status_code}, {kind}, not a JSON-RPC reply"


def _pages(list_page: Any) -> Iterator[dict[str, Any]]:
    """Every tool of a paged `tools/list`, following `nextCursor` to the end."""
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = list_page({"cursor": cursor} if cursor else None) or {}
        yield from page.get("tools") or []
        cursor = page.get("nextCursor")
        if not cursor:
            return


def _tool(listed: dict[str, Any]) -> TargetTool:
    return TargetTool(
        name=str(listed["name"]),
        description=str(listed.get("description") or ""),
        input_schema=dict(listed.get("inputSchema") or {"type": "object"}),
    )

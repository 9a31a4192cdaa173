"""Peers the lab's server is benchmarked against, doing the same tools.

- `bare`: a bare Starlette endpoint that parses a JSON-RPC body and answers JSON, nothing
  else, through Starlette's router (the lab's POST /mcp skips that router).
- `sdk`: `get_weather`, `update_work_item` and `crunch` as MRTR rounds on the official `mcp`
  SDK's `MCPServer`; what a Python user would otherwise run.
- `typescript.mjs` (started by `typescript`): the same tools on the official TypeScript SDK
  v2 server, its per-request handler on Node 22, requestState plain or HMAC-sealed.
- `sdk_legacy`: `get_weather` on the `mcp` SDK's own 2025-11-25 server, the call waiting on
  its SSE stream for the answer; the peer of the lab's legacy mode for held-call memory.
"""

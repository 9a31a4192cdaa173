"""Peers the lab's server is benchmarked against, on the same uvicorn stack.

- `bare`: a Starlette endpoint that parses a JSON-RPC body and answers JSON, nothing else;
  the ceiling of this stack.
- `sdk`: the same MRTR round trip (`get_weather` asks `github_login`, then completes)
  written with the official `mcp` SDK's `MCPServer`; what a user would otherwise run.
"""

"""The HTTP side of a replica: Streamable HTTP on Starlette, and who is calling (auth)."""

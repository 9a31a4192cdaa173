"""The protocol as data: JSON-RPC, versions, header and `_meta` names, input requests.

Standard library and orjson only, so the reference clients can use it without the server.
"""

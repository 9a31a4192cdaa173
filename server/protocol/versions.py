"""The protocol versions the lab speaks: the one home of their literals.

`MODERN` (2026-07-28) is stateless and ends a request `input_required` (MRTR); `LEGACY`
(2025-11-25) holds a session and asks on an SSE stream. A server speaks both, a client
one at a time.
"""

from __future__ import annotations

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
#: What this server lists in `supportedVersions` and in an unsupported-version error.
SUPPORTED_VERSIONS = [MODERN_VERSION, LEGACY_VERSION]

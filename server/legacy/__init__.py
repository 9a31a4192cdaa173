"""The legacy era (2025-11-25): sessions, calls held on SSE streams, where answers go."""

"""The simulated users: one whole tool call as a user lives it (MRTR, legacy SSE, or a
task), the user's answers and think time, and the small HTTP interface the flows are
written against, so they run on Locust's client, on httpx, or anywhere else."""

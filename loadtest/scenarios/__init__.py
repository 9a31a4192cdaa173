"""Scenarios: a headless swarm against a fresh cluster with a fault on cue, the summary of
what its users lived through and its table, and the run's simulated twin."""

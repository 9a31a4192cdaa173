"""The swarm: Locust users running the flows against a cluster, their statistics and call
records, the scenarios (a headless run with a fault on cue) and their simulated twin, the
interactive swarm with the lab's tab in Locust's web UI, and the soak."""

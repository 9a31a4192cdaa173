"""The swarm: Locust users running the flows against a cluster or an endpoint, how their
traffic reads in Locust's statistics, their call records relayed to the master, the
cluster's events and the requests' failures in words, and the swarm run itself (Locust's
master beside the cluster, with the lab's tab in its web UI)."""

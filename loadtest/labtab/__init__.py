"""The lab's tab in Locust's web UI: its routes and script, the Lab chart's series second by
second, and the lab's control of the cluster under load (each replica read, faults on
demand)."""

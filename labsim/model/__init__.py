"""The model: a simulated MCP deployment and the three ways it asks a user for input.

The parts of the world come first: the parameters (`params`, with `demand` and
`deployment`), the tools, the workload, the replicas and their workers (`cluster`,
`workers`), the load balancers, the shared store and the task store, the faults and the
autoscaler, and what a run records (`metrics`, `cost`). The architectures that serve
calls on them have a room of their own (`architectures`), and `simulation` puts one run
together. The model imports nothing of the study built on it (`labsim.study`).
"""

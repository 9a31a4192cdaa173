"""A plan's verdicts checked live: its workload on the lab's cluster at the plan's fleet
and one replica fewer, judged as the plan judged its simulation."""

"""The study: what is done with the model, from named scenarios to a priced plan.

Scenarios (`scenarios`), seeded replications with confidence intervals, comparisons and
sweeps (`experiments`, `persistent_sweep`), queueing theory and the checks against it
(`theory`, `validation`), right-sizing (`plan_request`, `capacity`), the model's speed
(`benchmark`) and the figures (`plots`). The study imports the model, never the other
way round.

    >>> from labsim import study
    >>> params = study.scenarios.build("crash", replicas=8)
    >>> params.cluster.replicas
    8
"""

from labsim.study import scenarios
from labsim.study.experiments import compare, replicate, sweep

__all__ = ["compare", "replicate", "scenarios", "sweep"]

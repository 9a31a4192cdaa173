"""The attack soak, one short mix per attack: every legitimate call through the cluster is
served while the attack runs.

The p95 against the quiet phase is a benchmark figure (`docs/hardening.md` has the full
runs): printed here, not asserted.
"""

from __future__ import annotations

import pytest

from loadtest.harness.haproxy import HAProxy
from loadtest.harness.redis_server import RedisServer
from loadtest.soak.attacks import ATTACKS
from loadtest.soak.run import print_attack_soak, run_attack_soak

pytestmark = pytest.mark.integration

#: Small enough for seconds: the full sizes are the soak command's.
SHORT_SIZES = {
    "slow-bodies": 100,
    "abandoned-waits": 200,
    "cpu-heavy": 4,
    "oversized": 2,
    "burst-stall": 100,
    "drip": 100,
    "small-cpu": 1,
    "subscription-growth": 2,
    "many-principals-waits": 12,
    "cross-origin-lab": 1,
    "busy-core": 1,
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_every_legitimate_call_is_served_beside_the_attack(attack: str) -> None:
    if not (HAProxy.available() and RedisServer.available()):
        pytest.skip("haproxy and redis-server are needed (make setup installs them)")
    report = run_attack_soak([attack], users=3, duration_s=1.5, sockets=SHORT_SIZES)
    print_attack_soak(report)
    quiet, attacked = report.phases
    assert quiet.completed > 0 and attacked.completed > 0
    assert (quiet.failed, attacked.failed) == (0, 0), attacked.errors
    assert attacked.attack is not None
    if attack == "busy-core":  # the control sends nothing: it spins a core for its seconds
        assert attacked.attack["sent"] == 0 and attacked.attack["cpu_s"] >= 1.0
    else:
        assert attacked.attack["sent"] > 0 and attacked.attack["cpu_s"] > 0
    assert attacked.marked_down == 0
    if attack == "cross-origin-lab":  # every forgery refused, the faults' above all
        answers = attacked.attack["answers"]
        assert {kind.split(" ")[0] for kind in answers} == {"fault", "read"}, answers
        assert {kind.split(" ")[1] for kind in answers} == {"403"}, answers

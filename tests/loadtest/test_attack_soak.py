"""The attack soak, one short mix per attack: every legitimate call through the cluster is
served while the attack runs.

The p95 against the quiet phase is a benchmark figure (`docs/hardening.md` has the full
runs): printed here, not asserted.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from loadtest.harness.haproxy import HAProxy
from loadtest.harness.redis_server import RedisServer
from loadtest.soak.attacks import ATTACKER_NICE, ATTACKS, AttackProcess
from loadtest.soak.run import print_attack_soak, run_attack_soak
from loadtest.soak.status_line import answer_of

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


def _niceness(pid: int) -> int:
    """A process's niceness, as the scheduler has it (/proc/PID/stat, field 19)."""
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[16])


def _family(pid: int) -> list[int]:
    """`pid` and its children."""
    with open(f"/proc/{pid}/task/{pid}/children") as children:
        return [pid, *(int(child) for child in children.read().split())]


@pytest.mark.parametrize("nice", [0, ATTACKER_NICE])
def test_the_attack_and_every_process_it_starts_run_at_the_attackers_priority(nice: int) -> None:
    """The soak runs its attacker at the lowest priority by default, as on a machine of its
    own (its `--attacker-nice`); the busy-core control's spinners inherit it."""
    attack = AttackProcess("busy-core", "127.0.0.1", 9, seconds=3.0, sockets=2, nice=nice)
    try:
        attack.wait_ready(timeout_s=30)
        assert attack.process is not None
        deadline = time.monotonic() + 10
        while len(family := _family(attack.process.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(family) >= 3, family  # the attack, its two spinners (and spawn's helper)
        assert {_niceness(pid) for pid in family} == {nice}
        # Its session too, where the scheduler shares the CPU between sessions first.
        autogroup = Path(f"/proc/{attack.process.pid}/autogroup")
        if autogroup.exists():
            assert autogroup.read_text().split()[-1] == str(nice), autogroup.read_text()
        assert attack.join()["cpu_s"] > 0
    finally:
        attack.stop()


def test_a_server_error_says_whether_a_replica_or_the_edge_answered_it() -> None:
    replica = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    replica += b"x-served-by: r1\r\n\r\n{}"
    edge = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 107\r\n\r\n<html>"
    assert answer_of(replica) == "503 replica" and answer_of(edge) == "503 edge"
    assert answer_of(b"HTTP/1.1 429 Too Many Requests\r\n\r\n") == "429"
    assert answer_of(b"") == "closed"

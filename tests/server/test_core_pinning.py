"""Pinning the lab's processes to cores (`--pin-cores`): the users' process moves to its
CPU, and a replica it starts afterwards still goes to the replicas' CPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from server.harness.process import pinned

TWO_CPUS = {0, 1} <= os.sched_getaffinity(0)


@pytest.mark.skipif(not TWO_CPUS, reason="needs CPUs 0 and 1")
def test_a_process_pinned_to_the_users_cpu_still_pins_its_replicas_to_theirs() -> None:
    script = """
import os, subprocess
from server.harness.process import pin_this_process, pinned
assert pin_this_process("1")
print(sorted(os.sched_getaffinity(0)))
child = subprocess.run(
    pinned(["python3", "-c", "import os; print(sorted(os.sched_getaffinity(0)))"], "0"),
    capture_output=True, text=True, check=True,
)
print(child.stdout.strip())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[1]", "[0]"]


def test_a_cpu_the_machine_lacks_leaves_the_command_as_it_is() -> None:
    command = ["python3", "-c", "pass"]
    assert pinned(command, str(max(os.sched_getaffinity(0)) + 64)) == command
    assert pinned(command, None) == command

"""verify-plan refuses a plan file whose figures the lab cannot run: each bad field is a
one-line error that names it, exit status 2, before anything starts."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loadtest.config import LoadTestError
from loadtest.verify.plan_file import parse_plan
from tests.loadtest.test_verify_plan import plan_document  # noqa: F401 (a fixture)

#: Each hostile figure: where in the plan (`ARCH` is an architecture with one fewer), the
#: value, and the field the error must name.
HOSTILE: list[tuple[str, Any, str]] = [
    ("architectures.ARCH.one_fewer.replicas", 6, "one_fewer.replicas"),
    ("architectures.ARCH.one_fewer.replicas", 0, "one_fewer.replicas"),
    ("architectures.ARCH.replicas", 100_000, "replicas"),
    ("architectures.ARCH.replicas", 2.5, "replicas"),
    ("request.answer_timeout_s", 1e9, "answer_timeout_s"),
    ("request.answer_timeout_s", -1, "answer_timeout_s"),
    ("request.answer_timeout_s", "10", "answer_timeout_s"),
    ("request.think_time_median_s", 1e300, "think_time_median_s"),
    ("request.think_time_sigma", 1e300, "think_time_sigma"),
    ("request.never_answer_share", 2, "never"),
    ("request.connection_limit", 10**12, "connection"),
    ("request.rate_per_s", 1e308, "rate"),
    ("request.round_cpu_ms", 1e300, "round_cpu_ms"),
    ("params.cluster.workers_per_replica", 1e300, "workers_per_replica"),
    ("params.cluster.workers_per_replica", 10**6, "workers_per_replica"),
    ("params.cluster.worker_speed", 0, "worker_speed"),
    ("params.client.max_retries", 10**9, "max_retries"),
    ("params.client.retry_backoff_s", 1e308, "retry_backoff_s"),
    ("params.workload.request_bytes", 10**12, "request_bytes"),
    ("params.workload.request_overhead_s", 1e300, "request_overhead_s"),
]


def hostile(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """The plan with the figure at `path` replaced by `value`."""
    bad = copy.deepcopy(document)
    arch = next(a for a, answer in bad["architectures"].items() if "one_fewer" in answer)
    *holders, name = path.replace("ARCH", arch).split(".")
    holder = bad
    for key in holders:
        holder = holder[key]
    holder[name] = value
    return bad


@pytest.mark.parametrize(("path", "value", "field"), HOSTILE)
def test_each_figure_out_of_range_is_refused_by_its_name(
    plan_document: dict[str, Any],  # noqa: F811 (the fixture)
    path: str,
    value: Any,
    field: str,
) -> None:
    parse_plan(plan_document)  # the plan as written is read
    with pytest.raises(LoadTestError) as refused:
        parse_plan(hostile(plan_document, path, value), "plan.json")
    message = str(refused.value)
    assert field in message.replace("-", "_") and "\n" not in message, message


def test_verify_plan_says_which_field_in_one_line_and_exits_2(
    plan_document: dict[str, Any],  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    for path, value, field in (HOSTILE[0], HOSTILE[4], HOSTILE[13]):
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps(hostile(plan_document, path, value)))
        done = subprocess.run(
            [sys.executable, "-m", "loadtest", "verify-plan", str(plan)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stderr
        assert len(lines) == 1 and field in lines[0] and "Traceback" not in done.stderr

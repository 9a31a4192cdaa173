"""The README's findings, reproduced from the commands it prints, in the words it uses.

"A balancer whose idle timeout is shorter than the users' thinking": the README prints
the sticky run's command and says "the same with `--arch mrtr`". Both run here as printed
(with `--json` added to read their summaries), side by side, and the finding's words are
checked on what they report: a dozen calls or so is enough for what the words claim
(answers asked again, more of them than calls; some calls lost; every MRTR call complete,
nobody asked again), not for shares such as "most".

"Replicas and the bill": the README prints the `labsim plan` command; it runs here as
printed (seconds), and each figure the bullet states is read from the bullet and checked
on the plan it writes.

Not run here: the rolling upgrade's `loadtest compare` (three clusters of three replicas,
minutes), and the plans checked live (docs/verify-plan.md keeps their runs).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loadtest.harness.haproxy import HAProxy

ROOT = Path(__file__).resolve().parents[1]
FINDING = "A balancer whose idle timeout is shorter than the users' thinking"
BILL = "Replicas and the bill."


def finding(title: str) -> str:
    """The README's bullet under `What the lab finds` that starts with `title`, in one line."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"- **{title}**")
    end = text.find("\n- ", start + 1)
    return " ".join(text[start:end].split())


def printed_command(bullet: str, program: str) -> list[str]:
    """The command a finding prints (inline code that starts with `program`), as words."""
    command = next(span for span in re.findall(r"`([^`]+)`", bullet) if span.startswith(program))
    words = shlex.split(command)
    assert words[:2] == ["python", "-m"] and words[2] in ("loadtest", "labsim")
    return [sys.executable, *words[1:]]


def run_side_by_side(commands: dict[str, list[str]], out: Path) -> dict[str, dict[str, Any]]:
    """Each command with `--json` into `out`, all at once; each one's summary."""
    running = {}
    for name, command in commands.items():
        with (out / f"{name}.log").open("w") as log:  # the child keeps its own copy
            running[name] = subprocess.Popen(
                [*command, "--json", str(out / f"{name}.json")], cwd=ROOT, stdout=log, stderr=log
            )
    try:
        for name, process in running.items():
            status = process.wait(timeout=240)
            assert status == 0, (out / f"{name}.log").read_text()[-2000:]
    finally:
        for process in running.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    return {name: json.loads((out / f"{name}.json").read_text()) for name in commands}


@pytest.mark.skipif(not HAProxy.available(), reason="haproxy is not installed")
@pytest.mark.integration
@pytest.mark.slow
def test_a_short_idle_timeout_finding_holds_as_the_readme_words_it(tmp_path: Path) -> None:
    bullet = finding(FINDING)
    sticky = printed_command(bullet, "python -m loadtest scenario idle-timeout")
    assert "the same with `--arch mrtr`" in bullet
    arch = sticky.index("--arch")
    assert sticky[arch + 1] == "sticky"
    mrtr = [*sticky[: arch + 1], "mrtr", *sticky[arch + 2 :]]
    runs = run_side_by_side({"sticky": sticky, "mrtr": mrtr}, tmp_path)

    legacy = runs["sticky"]
    assert "a dozen calls or so" in bullet and legacy["started"] >= 8, legacy["started"]
    # "asked again for answers they had already given, more answers than there were calls"
    assert legacy["re_prompts"] > legacy["started"], (legacy["re_prompts"], legacy["started"])
    # "and some calls were lost for good"
    assert legacy["lost"] > 0
    # "every MRTR call completed and nobody was asked again"
    calls = runs["mrtr"]
    assert calls["started"] >= 8 and calls["completed"] == calls["started"]
    assert calls["failed"] == calls["lost"] == calls["re_prompts"] == 0, calls["errors"]


def stated(pattern: str, bullet: str) -> list[int]:
    """The whole numbers the bullet states where `pattern` (a regex with groups) matches."""
    found = re.search(pattern, bullet)
    assert found, f"the README no longer says {pattern!r}: {bullet}"
    return [int(group) for group in found.groups()]


@pytest.mark.slow
def test_the_bill_finding_holds_as_the_readme_words_it(tmp_path: Path) -> None:
    bullet = finding(BILL)
    command = printed_command(bullet, "python -m labsim plan")
    done = subprocess.run(
        [*command, "--json", str(tmp_path / "plan.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads((tmp_path / "plan.json").read_text())["architectures"]
    store, sticky, mrtr = (answers[name] for name in ("sse-store", "sticky", "mrtr"))

    # "the legacy deployments need 4 replicas, bound by connections"
    (legacy_replicas,) = stated(
        r"legacy deployments need (\d+) replicas, bound by connections", bullet
    )
    for legacy in (store, sticky):
        assert (legacy["replicas"], legacy["binding"]) == (legacy_replicas, "connections"), legacy
    # "(USD 178 a month with the Redis store, 86 sticky)"
    usd_store, usd_sticky = stated(r"USD (\d+) a month with the Redis store, (\d+) sticky", bullet)
    assert round(store["cost_per_month_usd"]) == usd_store
    assert round(sticky["cost_per_month_usd"]) == usd_sticky
    # "at 3 they refuse thousands of requests and complete barely half their calls"
    (fewer,) = stated(r"at (\d+) they refuse thousands of requests", bullet)
    assert "complete barely half their calls" in bullet
    for legacy in (store, sticky):
        one_fewer = legacy["one_fewer"]
        assert one_fewer["replicas"] == fewer and not one_fewer["meets"], one_fewer
        assert one_fewer["refused_requests"] >= 2000, one_fewer["refused_requests"]
        assert 0.4 <= one_fewer["completed_share"] <= 0.65, one_fewer["completed_share"]
    # "MRTR needs 1 (USD 23), with nothing near its limit"
    mrtr_replicas, usd_mrtr = stated(r"MRTR needs (\d+) \(USD (\d+)\)", bullet)
    assert (mrtr["replicas"], round(mrtr["cost_per_month_usd"])) == (mrtr_replicas, usd_mrtr)
    assert "with nothing near its limit" in bullet and mrtr["binding"] == "none"
    assert max(use for use in mrtr["use"].values() if use is not None) < 0.5, mrtr["use"]

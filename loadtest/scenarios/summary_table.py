"""The table the load-test commands print: one row per run, then each run's headline.

`python -m loadtest scenario`, `compare` and a headless `swarm` end with it, so what the
README's findings quote is on the terminal: calls, outcomes, calls held, calls started
again, answers asked again, requests sent again, latency; then, a line each, the fault with
its times, each drain's time and what it still held when it was stopped, requests per
replica, tasks, and why requests failed (`loadtest.swarm.failure_reasons`).
"""

from __future__ import annotations

import contextlib
import html
import io
import textwrap
from pathlib import Path
from typing import Any

from loadtest.swarm.event_log import fault_spans
from loadtest.swarm.failure_reasons import explain

#: What the table's columns count, printed under it.
LEGEND = (
    "held: legacy calls kept on an open stream while their user thought (each once); "
    "restarted: legacy calls started again from their first question; re-asked: answers "
    "users gave again; resent: MRTR and task requests sent again (nobody asked again)"
)


def print_table(summaries: list[dict[str, Any]]) -> None:
    """One row per run (calls, outcomes, calls held, started again, answers asked again,
    rounds sent again, latency, throughput), then each run's headline in lines: its fault
    and drains, requests per replica, tasks, and its failures explained."""
    header = (
        f"{'arch':<10} {'scenario':<16} {'calls':>6} {'done':>6} {'failed':>6} {'lost':>5} "
        f"{'held':>5} {'restarted':>9} {'re-asked':>8} {'resent':>6} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'calls/s':>8}"
    )
    print(header)
    print("-" * len(header))
    for s in summaries:
        lat = s["latency_ms"]
        print(
            f"{s['arch']:<10} {s['scenario']:<16} {s['started']:>6} {s['completed']:>6} "
            f"{s['failed']:>6} {s['lost']:>5} {s.get('held', 0):>5} "
            f"{s.get('restarted', 0):>9} {s['re_prompts']:>8} {s.get('rounds_resent', 0):>6} "
            f"{_ms(lat['p50']):>8} {_ms(lat['p99']):>8} {s['throughput_per_s']:>8.1f}"
        )
    print(textwrap.fill(LEGEND, width=len(header)))
    for s in summaries:
        for line in headline(s):
            print(f"{s['arch']}: {line}")
    for s in summaries:
        if s.get("target") and s.get("per_tool"):
            print_tool_table(s["per_tool"])


def print_tool_table(tools: dict[str, dict[str, Any]]) -> None:
    """A swarm on a target, tool by tool: calls, how they ended, rounds per completed call,
    latency; then each tool's failures in the server's words."""
    width = max([len("tool"), *(len(name) for name in tools)])
    header = (
        f"{'tool':<{width}} {'calls':>6} {'done':>6} {'failed':>6} {'lost':>5} "
        f"{'rounds':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, t in tools.items():
        rounds = "-" if t["rounds_mean"] is None else f"{t['rounds_mean']:.2f}"
        print(
            f"{name:<{width}} {t['calls']:>6} {t['completed']:>6} {t['failed']:>6} "
            f"{t['lost']:>5} {rounds:>6} {_ms(t['p50_ms']):>8} {_ms(t['p95_ms']):>8} "
            f"{_ms(t['p99_ms']):>8}"
        )
    for name, t in tools.items():
        for reason, n in t["failures"].items():
            print(f"{name}: {n} x {reason}")


def headline(summary: dict[str, Any]) -> list[str]:
    """What a run's summary says beyond its row, a line each: the fault and its drains,
    requests per replica, tasks, and why requests failed."""
    lines = []
    fault = fault_line(summary.get("faults", []))
    if fault:
        lines.append(fault)
    drained = summary.get("drains") or []
    if drained:
        lines.append(drain_line(drained, summary.get("config", {}).get("drain_timeout_s")))
    if summary.get("per_replica"):
        per_replica = summary["per_replica"]
        if set(per_replica) == {"none"}:
            # A target that does not say which replica answered (the lab's server does).
            lines.append(f"HTTP requests: {per_replica['none']['requests']} (no replica named)")
        else:
            served = ", ".join(f"{r} {v['requests']}" for r, v in per_replica.items())
            lines.append(f"HTTP requests per replica: {served}")
    if summary["tasks"]["started"] or summary["tasks"]["refused"]:
        lines.append("tasks: " + ", ".join(f"{k} {v}" for k, v in summary["tasks"].items()))
    lines += failure_lines(summary)
    return lines


def fault_line(faults: list[dict[str, Any]]) -> str:
    """The run's faults in words, with their times since the users started."""
    spans = fault_spans(faults)
    said = []
    for span in spans:
        end = "the end" if span.end_s is None else f"{span.end_s:.1f} s"
        said.append(f"{span.label} from {span.start_s:.1f} s to {end}")
    return "fault: " + "; ".join(said) if said else ""


def drain_line(drained: list[dict[str, Any]], timeout_s: float | None) -> str:
    """Each drain's time, and what the replica still held when it was stopped."""
    times = ", ".join(f"{d['replica']} {_duration(d['drained_s'])}" for d in drained)
    cut = [d for d in drained if d["still_held"]]
    if not cut:
        return f"drains: {times}, each replica empty when stopped"
    timeout = f" (timeout {timeout_s:g} s)" if timeout_s is not None else ""
    open_then = ", ".join(f"{d['replica']} {d['still_held']}" for d in cut)
    return (
        f"drains: {times}{timeout}; stopped with requests (held streams among them) still "
        f"being served: {open_then}"
    )


def failure_lines(summary: dict[str, Any]) -> list[str]:
    """Why HTTP requests failed, by round kind, for the run's fault; then the calls'
    own errors, most frequent first."""
    locust = summary.get("locust") or {}
    requests = locust.get("http_by_kind", {})
    scenario = summary.get("scenario")
    fault = None if scenario in (None, "steady") else scenario
    during = " and ".join(
        f"{span.said} ({span.start_s:.1f}-"
        + ("the end" if span.end_s is None else f"{span.end_s:.1f} s")
        + ")"
        for span in fault_spans(summary.get("faults", []))
    )
    failed = sorted(locust.get("http_failures_by_kind", {}).items(), key=lambda kv: -kv[1])
    lines = [
        "failures: " + explain(kind, n, requests.get(kind, n), fault=fault, during=during)
        for kind, n in failed
    ]
    for error, n in list(summary.get("errors", {}).items())[:3]:
        lines.append(f"calls not completed: {n} x {error}")
    return lines


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table_text(summaries: list[dict[str, Any]], *more: str) -> str:
    """What `print_table` prints, and `more` lines after it, as one text."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_table(summaries)
    return out.getvalue() + "".join(f"{line}\n" for line in more)


def add_to_html_report(path: Path, text: str) -> None:
    """Put the lab's summary (`text`) at the top of Locust's HTML report at `path`."""
    section = (
        '<section id="lab-summary" style="font-family: monospace; padding: 1em">'
        f"<h2>MRTR Lab summary</h2><pre>{html.escape(text)}</pre></section>"
    )
    page = path.read_text()
    at = page.find("<body")
    at = page.find(">", at) + 1 if at >= 0 else 0
    path.write_text(page[:at] + section + page[at:])

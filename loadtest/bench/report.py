"""The bench's report as a reader sees it: tables of servers and rounds, ratios, tails."""

from __future__ import annotations

from typing import Any

from loadtest.bench.microbench import print_in_process, print_state_report


def _cell(ratio: dict[str, float], prefix: str = "") -> str:
    """A ratio's median and its spread over passes, or n/a where it was not measured."""
    if f"{prefix}median" not in ratio:
        return "n/a"
    low, high = ratio[prefix + "min"], ratio[prefix + "max"]
    return f"{ratio[prefix + 'median']:.2f}x ({low:.2f}-{high:.2f})"


def _print_ratio_table(
    ratios: dict[str, Any], peers: list[str], prefix: str, kinds: list[str]
) -> None:
    """One row per peer, one cell per round kind: the median ratio and its spread over passes.

    `prefix` picks the ratio: "" for req/s, "cpu_" for CPU per request.
    """
    width = max(9, *(len(peer) + 1 for peer in peers))
    print((" " * width + "".join(f"{kind:<21}" for kind in kinds)).rstrip())
    for peer in peers:
        cells = [_cell(ratios[f"lab/{peer} {kind}"], prefix) for kind in kinds]
        print((peer.ljust(width) + "".join(cell.ljust(21) for cell in cells)).rstrip())


def print_report(report: dict[str, Any]) -> None:
    """The report as tables: every server and round, the lab's ratios, tails, microbenchmarks."""
    print(
        f"stack: {report['stack']} (Python servers), Node 22 (ts), wrk -t1 "
        f"-c{report['connections']} {report['duration_s']:g} s, pinned cores; "
        f"median of {report['passes']} interleaved passes"
    )
    for name, why in report["missing"].items():
        print(f"missing: {name} ({why})")
    servers = report["servers"]
    kinds = list(servers["lab"])
    for name, commit in report.get("commits", {}).items():
        print(f"{name}: the lab's server at commit {commit}, beside today's")
    tails = report["p99_over_p50"]
    width = max(8, *(len(name) for name in servers))
    print(
        f"{'round':<7} {'server':<{width}} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'p99/p50':>8} "
        f"{'CPU us/req':>10} {'user':>5} {'kernel':>6}"
    )
    for kind in kinds:
        for name, per_kind in servers.items():
            r = per_kind[kind]
            print(
                f"{kind:<7} {name:<{width}} {r['requests_per_s']:>8.0f} {r['p50_ms']:>7.2f} "
                f"{r['p99_ms']:>7.2f} {tails[kind][name]:>8.1f} "
                f"{r.get('cpu_us_per_request', float('nan')):>10.0f} "
                f"{r.get('user_us_per_request', float('nan')):>5.0f} "
                f"{r.get('kernel_us_per_request', float('nan')):>6.0f}"
            )
    peers = [peer for peer in servers if peer != "lab"]
    print("lab's req/s over each peer's, median of per-pass ratios (min-max over passes):")
    _print_ratio_table(report["ratios"], peers, "", kinds)
    print(
        "each peer's CPU per request over the lab's (requests a core serves, lab/peer), "
        "median of per-pass ratios (min-max over passes):"
    )
    _print_ratio_table(report["ratios"], peers, "cpu_", kinds)
    if "bare" in servers:
        print(
            "tail: lab's p99/p50 over bare's, median over passes (target 1.25x or less): "
            + ", ".join(f"{kind} {tails[kind]['lab/bare']:.2f}x" for kind in kinds)
        )
    if "over_bare" in report and report.get("commits"):
        print("each server's req/s over bare's, median of per-pass ratios (min-max over passes):")
        over = report["over_bare"]
        _print_ratio_table(
            {f"lab/{n} {k}": over[n][k] for n in over for k in kinds}, list(over), "", kinds
        )
    if "floor_over_bare" in report:
        floor = report["floor_over_bare"]
        print(
            "floor's req/s over bare's, median of per-pass ratios (min-max over passes): "
            + ", ".join(f"{kind} {_cell(floor[kind])}" for kind in kinds)
        )
    if "lab_gc_per_10k_requests" in report:
        print(
            f"lab's garbage collections per 10,000 timed requests "
            f"({report['lab_gc_requests']:,} in all), generation 0/1/2: "
            + ", ".join(
                f"{kind} " + "/".join(f"{n:.2f}" for n in gens)
                for kind, gens in report["lab_gc_per_10k_requests"].items()
            )
        )
    if "request_state" in report:
        print_state_report(report["request_state"])
    if "in_process" in report:
        print_in_process(report["in_process"])

"""The calibration's report as a table: live beside simulated, medians with their spread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _live(figure: dict[str, Any], digits: int) -> str:
    """The live median with its min-max over the runs, e.g. `98 (82-152)`."""
    low, high = figure["spread"]
    return f"{figure['measured']:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def _ratio(value: float | None) -> str:
    """A ratio of the table, or `dist.` for a level too disturbed to report."""
    return "dist." if value is None else f"{value:.2f}"


def print_calibration(report: dict[str, Any]) -> None:
    """The side-by-side table, and what was left out as disturbed."""
    c, inputs = report["calibrated"], report["inputs"]
    print(
        f"{report['arch']}: CPU {c['round_cpu_ms']:.3f} ms per round (fitted; quote spends "
        f"{c['quote_cpu_ms']:g}); the probe's rounds (quote spends 0) busy "
        f"{c['probe_service_ms']:.3f} ms, {c['probe_round_ms']:.3f} ms without background; the "
        f"delay beyond them (network + LB + client) "
        f"{c['network_ms']:.3f} ms per round "
        f"(mean, lognormal cv {c['network_cv']:.2f}); think median {c['think_time_median_s']:g} s"
    )
    print(
        f"service time per round, timed on the replica ({inputs['service_cv_rounds']} rounds "
        f"one at a time, {inputs['service_spread_merged']} merged stretches left out): mean "
        f"{inputs['service_spread_mean_ms']:.2f} ms (busy {inputs['service_spread_busy_ms']:.2f}"
        f" ms from /proc), p95 {inputs['service_spread_p95_ms']:.2f} ms, "
        f"cv {inputs['service_cv']:.2f} (simulated)"
    )
    print(
        f"levels: median of {report['repeats']} runs of {report['duration_s']:g} s each, "
        f"live min-max in brackets; ratio = simulated / live of the medians"
    )
    print(
        f"{'busy':>5} {'sim':>5} {'wait':>5} {'svc ms':>6}  {'calls/s':>18} {'sim':>6} "
        f"{'ratio':>5}  {'p50 ms':>16} {'sim':>6} {'ratio':>5}  {'p95 ms':>18} {'sim':>6} "
        f"{'ratio':>5}"
    )
    for row in report["levels"]:
        t, p50, p95, r = row["throughput"], row["p50_ms"], row["p95_ms"], row["ratio"]
        print(
            f"{row['utilization']:>5.2f} {row['utilization_predicted']:>5.2f} "
            f"{row['cpu_wait_share']:>5.2f} {row['service_ms']:>6.2f}  "
            f"{_live(t, 1):>18} {t['predicted']:>6.1f} {_ratio(r['throughput']):>5}  "
            f"{_live(p50, 1):>16} {p50['predicted']:>6.1f} {_ratio(r['p50_ms']):>5}  "
            f"{_live(p95, 1):>18} {p95['predicted']:>6.1f} {_ratio(r['p95_ms']):>5}"
        )
        if "held_memory_bytes" in row:
            held = row["held_memory_bytes"]
            low, high = held["spread"]
            print(
                f"      held memory: {held['measured'] / 1024:.0f} KiB live "
                f"({low / 1024:.0f}-{high / 1024:.0f}), {held['predicted'] / 1024:.0f} KiB "
                f"simulated"
            )
    probes = report.get("probes", [])
    if probes:
        print(
            "probes (delay outside the replica per round, ms; * taken): "
            + ", ".join(
                f"{p['network_ms']:.2f}{'*' if p['chosen'] else ''}"
                f"{' (disturbed)' if p['disturbed'] else ''}"
                for p in probes
            )
        )
    for flag in report.get("disturbed", []):
        print(f"disturbed, left out: {flag}")
    if "held_call_bytes" in report:
        h = report["held_call_bytes"]
        print(
            f"held call: {h['measured'] / 1024:.1f} KiB measured (RSS), "
            f"{h['simulated'] / 1024:.1f} KiB in labsim's defaults "
            f"(object graph {h['object_graph'] / 1024:.1f} KiB)"
        )
    if "upgrade" in report:
        up = report["upgrade"]
        print(
            f"rolling upgrade (drain timeout {up['drain_timeout_s']:g} s, think median "
            f"{up['think_time_median_s']:g} s, restart {up['restart_s']:.2f} s, means of "
            f"{up['repeats']} live runs): "
            + ", ".join(
                f"{name} {up[key]['measured']:.1f} live "
                f"{tuple(up[key]['measured_runs'])} / {up[key]['predicted']:.1f} sim"
                for key, name in (
                    ("lost", "lost"),
                    ("re_prompts", "re-prompts"),
                    ("restarts", "restarts"),
                )
            )
        )


def markdown_levels(reports: list[dict[str, Any]]) -> list[str]:
    """Stored calibration reports as one Markdown table of levels, as the README shows
    them: live median (min-max over runs) / simulated median, and the ratios, any outside
    ±20% in bold."""

    def ratio(value: float | None) -> str:
        if value is None:
            return "disturbed"
        text = f"{value:.2f}"
        return text if 0.8 <= value <= 1.2 else f"**{text}**"

    lines = [
        "| arch | busy live / sim | wait | calls/s | p50 ms | p95 ms | ratios: calls/s, p50, p95 |",
        "|---|---|---|---|---|---|---|",
    ]
    for report in reports:
        for row in report["levels"]:
            t, p50, p95, r = row["throughput"], row["p50_ms"], row["p95_ms"], row["ratio"]
            lines.append(
                f"| `{report['arch']}` | {row['utilization']:.2f} / "
                f"{row['utilization_predicted']:.2f} | {row['cpu_wait_share']:.2f} | "
                f"{_live(t, 1)} / {t['predicted']:.1f} | {_live(p50, 1)} / "
                f"{p50['predicted']:.1f} | {_live(p95, 0)} / {p95['predicted']:.0f} | "
                + ", ".join(ratio(r[name]) for name in ("throughput", "p50_ms", "p95_ms"))
                + " |"
            )
    return lines


def markdown_upgrades(reports: list[dict[str, Any]]) -> list[str]:
    """The rolling upgrades of stored reports as a Markdown table, live (each run) / simulated."""
    lines = [
        "| arch | lost live / sim | re-prompts live / sim | restarts live / sim | restart |",
        "|---|---|---|---|---|",
    ]
    for report in reports:
        if "upgrade" not in report:
            continue
        up = report["upgrade"]
        cells = [
            f"{up[key]['measured']:.1f} {tuple(up[key]['measured_runs'])} / "
            f"{up[key]['predicted']:.1f}"
            for key in ("lost", "re_prompts", "restarts")
        ]
        lines.append(
            f"| `{report['arch']}` | " + " | ".join(cells) + f" | {up['restart_s']:.2f} s |"
        )
    return lines


def print_stored(paths: list[str]) -> None:
    """Stored reports (`calibrate --json`) as the README's two Markdown tables."""
    reports = [json.loads(Path(path).read_text()) for path in paths]
    print("\n".join([*markdown_levels(reports), "", *markdown_upgrades(reports)]))

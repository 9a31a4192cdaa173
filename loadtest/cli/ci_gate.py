"""What a headless swarm does with its summary for CI: thresholds, a comparison, a report.

`--fail-if` expressions and the `--compare` file are read before the run starts, so a
typo or a missing file is refused at once; after the run the summary is written
(`--json`), printed, compared, put into Locust's HTML report (`--html`), and the command's
exit status is 1 when any threshold holds, with the ones that do printed.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadtest.cli.options import write_json
from loadtest.config import LoadTestConfig, LoadTestError
from loadtest.scenarios.headline_figures import change_lines
from loadtest.scenarios.thresholds import Threshold, ThresholdError, crossed, parse_threshold
from loadtest.swarm.plan import SwarmPlan


@dataclass
class CiGate:
    """A swarm's thresholds, the earlier run it is compared with, and where it reports."""

    config: LoadTestConfig
    plan: SwarmPlan
    thresholds: list[Threshold] = field(default_factory=list)
    earlier: dict[str, Any] | None = None
    json_path: str | None = None
    html: bool = False

    def judge(self, summary: dict[str, Any]) -> int:
        """Report the run; 1 when a threshold holds, else 0."""
        from loadtest.scenarios.summary_table import add_to_html_report, table_text
        from loadtest.swarm.rate_ceiling import ceiling_lines

        if self.plan.find_ceiling and self.plan.params:
            summary.update(self._prediction(summary))
        write_json(summary, self.json_path)
        more = ceiling_lines(summary) if self.plan.find_ceiling else []
        if self.earlier is not None:
            more += ["change against the earlier run:", *change_lines(self.earlier, summary)]
        failing = crossed(self.thresholds, summary)
        more += [f"fail-if: {line}" for line in failing]
        text = table_text([summary], *more)
        print(text, end="")
        print("completed per worker: " + json.dumps(summary["per_worker"]))
        if self.html and self.plan.html_path is not None and self.plan.html_path.exists():
            add_to_html_report(self.plan.html_path, text)
        return 1 if failing else 0

    def _prediction(self, summary: dict[str, Any]) -> dict[str, Any]:
        """The simulation's ceiling at the rates the swarm steps through; what kept the
        simulation from answering (a tool it does not model, a file it cannot read) is
        said in the summary rather than lose the run's figures."""
        from loadtest.scenarios.ceiling_prediction import predicted_ceiling, service_round
        from loadtest.swarm.rate_ceiling import ceiling_search

        search = ceiling_search(self.config, self.plan)
        rates = [search.rate_of(k) for k in range(1, self.plan.max_steps + 1)]
        round_ms, round_from = service_round(self.plan.predict_round_ms, summary)
        try:
            return predicted_ceiling(
                str(self.plan.params),
                self.config,
                rates,
                self.plan.slo_p95_ms,
                self.plan.max_error_share,
                round_ms,
                round_from,
            )
        except (ValueError, OSError) as error:
            return {"predicted_ceiling_rate_per_s": None, "prediction_error": str(error)}


def ci_gate(args: argparse.Namespace, config: LoadTestConfig, plan: SwarmPlan) -> CiGate:
    """The swarm's CI gate from its flags, refused before the run when it cannot be judged."""
    try:
        thresholds = [parse_threshold(text, list(config.tool_mix)) for text in args.fail_if or []]
    except ThresholdError as error:
        raise LoadTestError(str(error)) from None
    earlier = None
    if args.compare:
        try:
            earlier = json.loads(Path(args.compare).read_text())
        except (OSError, ValueError) as error:
            raise LoadTestError(f"--compare {args.compare}: {error}") from None
        if not isinstance(earlier, dict) or "latency_ms" not in earlier:
            raise LoadTestError(f"--compare {args.compare}: not a run's summary (--json)")
    if plan.params and not Path(plan.params).exists():
        raise LoadTestError(f"--params {plan.params}: no such file")
    from loadtest.swarm.shaped_run import check_shape

    check_shape(config, plan)
    return CiGate(config, plan, thresholds, earlier, args.json, bool(args.html))

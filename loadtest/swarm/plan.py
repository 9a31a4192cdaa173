"""How a swarm runs: where its users run, how its master listens, its web UI or its
headless run, and what it drives.

Kept apart from `loadtest.swarm.runner`, which loads Locust (and with it gevent's patching
of the standard library), so that the command line can offer these options without
loading Locust. Each field is one option of `python -m loadtest swarm`, stated once
(`server.flags.setting`); the run's own settings (users, duration, fault time ...) are
the fields of `LoadTestConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loadtest.config import FAULTS
from loadtest.target.callers import TargetCallers
from server.flags import setting
from server.protocol.versions import LEGACY_VERSION, MODERN_VERSION

#: What `--era` takes with a target: one protocol era, or both it speaks (users split).
TARGET_ERAS = (MODERN_VERSION, LEGACY_VERSION, "both")
#: What `--shape` takes (`loadtest.swarm.load_shapes`).
SHAPES = ("ramp", "step", "spike", "soak")
#: Locust's own port for workers to reach their master.
LOCUST_MASTER_PORT = 5557


@dataclass(frozen=True)
class SwarmPlan(TargetCallers):
    """How one swarm runs, beside the run's configuration."""

    workers: int = setting(
        1, help="local Locust worker processes running the users; 0 runs them in this process"
    )
    expect_workers: int = setting(
        0, help="workers from other machines (--join) to wait for before starting"
    )
    master_bind: str = setting(
        "127.0.0.1",
        help="interface the master listens on for workers (0.0.0.0 for other machines)",
    )
    master_port: int = setting(LOCUST_MASTER_PORT, help="port the master listens on for workers")
    join: str | None = setting(
        None,
        metavar="HOST[:PORT]",
        help="run only --workers workers, for the master at HOST:PORT",
    )
    target: str | None = setting(
        None,
        metavar="URL",
        help="drive this MCP endpoint (e.g. http://host:8000/mcp) instead of a cluster of the "
        "lab's own, calling its own tools (--tools NAME=W,...; default: every tool it lists, "
        "equally); faults then come from its operator",
    )
    era: str = setting(
        "both",
        choices=TARGET_ERAS,
        help="with --target: the protocol era its users speak; both: the users split between "
        "the eras it speaks",
    )
    headless: bool = setting(
        False, help="no web UI: run --users for --duration seconds, then summarise"
    )
    web_port: int = setting(8089, help="port of Locust's web UI on 127.0.0.1")
    fault: str | None = setting(
        None,
        choices=FAULTS,
        help="a headless run injects this fault into the lab's cluster at --fault-at",
    )
    shape: str | None = setting(
        None,
        choices=SHAPES,
        help="a headless run's users over time (closed loop, up to --users, until --duration): "
        "ramp over --ramp-s; step by --step-users every --step-s; spike to --spike-users at "
        "--spike-at-s for --spike-s; soak: a ramp then a long plateau",
    )
    ramp_s: float = setting(10.0, help="--shape ramp|soak: seconds to reach --users")
    step_s: float = setting(10.0, help="--shape step and --find-ceiling: seconds of each step")
    step_users: int = setting(1, help="--shape step: users added at each step")
    spike_users: int = setting(0, help="--shape spike: users during the spike")
    spike_at_s: float = setting(10.0, help="--shape spike: when the spike begins (s)")
    spike_s: float = setting(5.0, help="--shape spike: how long the spike lasts (s)")
    find_ceiling: bool = setting(
        False,
        help="a headless run steps the open-loop rate by --rate every --step-s until the SLO "
        "(--slo-p95-ms, --max-error-share) breaks, and reports the highest rate that held",
    )
    max_steps: int = setting(10, help="--find-ceiling: the most steps it runs")
    confirm_breaks: bool = setting(
        False,
        help="--find-ceiling: a step that breaks the SLO runs once more at its rate, and the "
        "search stops only when that repeat breaks too (one stall of a shared machine is not "
        "the ceiling)",
    )
    start_rate: float | None = setting(
        None,
        metavar="PER_S",
        help="--find-ceiling: the first step's rate, a whole number of --rate (default: --rate), "
        "so that the steps start near the knee rather than climb to it",
    )
    slo_p95_ms: float = setting(
        250.0, help="--find-ceiling: the SLO's p95 latency of a completed call (ms)"
    )
    max_error_share: float = setting(
        0.01, help="--find-ceiling: the SLO's most failed and lost calls, as a share"
    )
    params: str | None = setting(
        None,
        metavar="FILE",
        help="--find-ceiling: a labsim parameter file; the simulation's ceiling for the same "
        "replicas, tool work and SLO is printed beside the one found",
    )
    predict_round_ms: float | None = setting(
        None,
        metavar="MS",
        help="--find-ceiling --params: the service time of one round the simulation assumes "
        "(default: on the lab's cluster, the replicas' busy time per round, CPU and wait for "
        "a CPU, near the knee: the step that broke and the two before it; against a target, "
        "--tool-cpu-ms and the parameter file's request overhead)",
    )
    start_users: bool = setting(
        False,
        help="with the web UI, start the users at once rather than wait for its start form; "
        "no flag of its own: set when --users is given",
        cli=False,
    )
    fail_if: tuple[str, ...] = setting(
        (),
        help="exit 1 when this holds at the end of a headless run, e.g. p95_ms>500, "
        "error_share>0.01, TOOL.p95_ms>=800 (operators > >= < <= ==); repeatable",
        metavar="EXPR",
    )
    html: str | None = setting(
        None, help="write Locust's HTML report with the lab's summary", metavar="F"
    )
    compare: str | None = setting(
        None,
        help="print each headline figure's change against an earlier run's summary",
        metavar="OLD.json",
    )
    html_path: Path | None = setting(
        None,
        help="where a headless run keeps Locust's HTML report; no flag of its own: beside "
        "the summary (--json)",
        cli=False,
    )

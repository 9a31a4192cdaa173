"""The commands that run the lab's cluster, and users against it.

    cluster    the cluster alone, up until Ctrl-C
    scenario   one scenario: a cluster, a headless swarm, a fault on cue; its summary
               (open loop with --rate: calls started at exponential intervals)
    compare    one scenario under each architecture
    swarm      a Locust swarm with the lab's tab in its web UI, or headless

Their run settings are the fields of `LoadTestConfig`; the swarm's are declared once
(`SWARM_SETTINGS`) and taken by every command that runs users.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from loadtest.cli.ci_gate import ci_gate
from loadtest.cli.options import add_json_option, command_options, run_settings, write_json
from loadtest.config import ARCHITECTURES, LoadTestConfig, LoadTestError
from loadtest.swarm.plan import SwarmPlan
from loadtest.users.tool_mix import ToolMixError, check_tool_mix
from server.core.methods import SERVER_INFO
from server.flags import add_flags, setting_of, values_from_flags

#: How each replica of the lab's cluster is started: every command that starts one takes them.
REPLICA_SETTINGS = ("max_connections", "cpu_workers", "cpu_inline_max_ms", "answer_timeout_s")
#: The swarm's settings: every command that runs users takes them.
SWARM_SETTINGS = (
    "replicas",
    "users",
    "rate_per_s",
    "duration_s",
    "fault_at_s",
    "think_time_median_s",
    "think_time_sigma",
    "never_answer_share",
    "drain_timeout_s",
    "tool_mix",
    "tool_cpu_ms",
    "tool_cpu_cv",
    "tool_cpu_kind",
    "argument_bytes",
    "max_retries",
    "retry_backoff_s",
    "retry_backoff_max_s",
    *REPLICA_SETTINGS,
)
#: What a scenario adds to them: the task store, the fault's seed and the idle timeout.
SCENARIO_SETTINGS = ("task_wire", "task_store_fsync", "seed", "lb_idle_timeout_s", "pin_cores")
#: `--json` of a run: its summary, and Locust's HTML report beside it.
SUMMARY = "write the summary here, Locust's HTML report beside it (a swarm's: headless only)"
#: `--json` of a comparison: one summary per architecture, each one's HTML report beside.
SUMMARIES = "write the summaries here, each architecture's Locust HTML report beside them"


def add_commands(commands: Any) -> None:
    """cluster, scenario, compare and swarm."""
    _add_cluster(commands)
    _add_scenario(commands)
    _add_compare(commands)
    _add_swarm(commands)


def _add_cluster(commands: Any) -> None:
    cluster = commands.add_parser("cluster", help="start a cluster and keep it up until Ctrl-C")
    add_flags(run_settings(cluster), LoadTestConfig, only=("arch", "replicas", *REPLICA_SETTINGS))
    options = command_options(cluster)
    options.add_argument("action", choices=["up"], help="up: start it, until Ctrl-C")
    options.add_argument(
        "--lb-port", type=int, default=None, help="HAProxy's port on 127.0.0.1 (a free one)"
    )
    cluster.set_defaults(run=run_cluster)


def _add_scenario(commands: Any) -> None:
    scenario = commands.add_parser("scenario", help="run one scenario and summarise it")
    settings = run_settings(scenario)
    # The scenario is the command's positional argument, with the field's help and choices.
    described = setting_of(_field("scenario"))
    settings.add_argument("scenario", choices=described.choices, help=described.help)
    add_flags(settings, LoadTestConfig, only=("arch", *SWARM_SETTINGS, *SCENARIO_SETTINGS))
    add_json_option(command_options(scenario), SUMMARY)
    scenario.set_defaults(run=run_scenario)


def _add_compare(commands: Any) -> None:
    compare = commands.add_parser("compare", help="run a scenario for all three architectures")
    add_flags(
        run_settings(compare),
        LoadTestConfig,
        only=("scenario", *SWARM_SETTINGS, *SCENARIO_SETTINGS),
        defaults={"scenario": "rolling-upgrade"},
    )
    add_json_option(command_options(compare), SUMMARIES)
    compare.set_defaults(run=run_compare)


def _add_swarm(commands: Any) -> None:
    swarm = commands.add_parser(
        "swarm", help="a Locust swarm with the lab's tab in its web UI (or headless)"
    )
    # Users left unset: with the web UI, the swarm then waits for its start form.
    add_flags(
        run_settings(swarm),
        LoadTestConfig,
        only=("arch", "spawn_rate", "pin_cores", *SWARM_SETTINGS),
        defaults={"users": None},
    )
    options = command_options(swarm)
    add_flags(options, SwarmPlan)
    add_json_option(options, SUMMARY)
    swarm.set_defaults(run=run_swarm)


def _field(name: str) -> dataclasses.Field[Any]:
    (found,) = (field for field in dataclasses.fields(LoadTestConfig) if field.name == name)
    return found


def config_from(args: argparse.Namespace, **overrides: Any) -> LoadTestConfig:
    """The run's configuration: the fields the flags set, then `overrides`, then defaults;
    a tool mix the users cannot run is refused here, before any process starts."""
    config = LoadTestConfig(**{**values_from_flags(LoadTestConfig, args), **overrides})
    try:
        check_tool_mix(config.tool_mix)
    except ToolMixError as error:
        raise LoadTestError(str(error)) from None
    return config


def html_beside(json_path: str | None, arch: str = "") -> Path | None:
    """Where Locust's HTML report goes: beside the summary (`out.json` -> `out.html`, or
    `out.mrtr.html` for one architecture of a comparison); nowhere without a summary."""
    if not json_path:
        return None
    return Path(json_path).with_suffix(f".{arch}.html" if arch else ".html")


def target_config(args: argparse.Namespace) -> LoadTestConfig:
    """A swarm on a target: the target discovered and its tools checked before anything
    starts (refused in one line), its mix handed to the users; the run's configuration
    with the target's tools as the mix. A deployment of the lab's own server keeps the
    lab's users, their demo mix (`--tools`) and the era of `--arch`."""
    from loadtest.swarm.target_mix import plan_target_mix
    from loadtest.target import TargetError
    from server.harness.principals import user_token

    # Without a token of its own, a lab deployment's users mint theirs with its secret.
    secret = os.environ.get("MRTR_JWT_SECRET")
    token = args.token or (user_token(secret) if secret and not args.tokens_file else None)
    try:
        mix = plan_target_mix(
            args.target,
            args.tool_mix,
            era=args.era,
            token=token,
            tokens_file=args.tokens_file,
            workload_path=args.workload,
        )
        if mix.server_name == SERVER_INFO["name"]:
            # A deployment of the lab's own server: its users know its tools (tasks run as
            # tasks, answers it checks, results verified) and speak the era of --arch.
            return config_from(args)
        mix.warm_up()  # each tool's arguments drawn once: a schema that gives none refused
    except TargetError as error:
        raise LoadTestError(str(error)) from None
    mix.export()
    return LoadTestConfig(**{**values_from_flags(LoadTestConfig, args), "tool_mix": mix.weights})


def run_cluster(args: argparse.Namespace) -> int:
    from loadtest.harness.cluster import Cluster

    config = config_from(args)
    try:
        with Cluster(config, lb_port=args.lb_port) as cluster:
            print(f"{config.arch} cluster up: {cluster.url}")
            for name, replica in cluster.replicas.items():
                print(f"  {name}: {replica.base_url} (pid {replica.pid})")
            lb_pid = cluster.lb.pid if cluster.lb is not None else None
            print(f"  haproxy: 127.0.0.1:{cluster.lb_port} (pid {lb_pid})")
            if cluster.redis is not None:
                print(f"  redis: {cluster.redis.url} (pid {cluster.redis.pid})")
            print(f"  haproxy admin socket: {cluster.api.socket_path}")
            print("Ctrl-C stops everything.", flush=True)
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        print("stopped: every process of the cluster has exited")
    return 0


def run_scenario(args: argparse.Namespace) -> int:
    from loadtest.scenarios.run import run_scenario
    from loadtest.scenarios.summary_table import print_table

    summary = run_scenario(config_from(args), html_path=html_beside(args.json))
    write_json(summary, args.json)
    print_table([summary])
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from loadtest.scenarios.run import run_scenario
    from loadtest.scenarios.summary_table import print_table

    summaries = [
        run_scenario(config_from(args, arch=arch), html_path=html_beside(args.json, arch))
        for arch in ARCHITECTURES
    ]
    write_json(summaries, args.json)
    print_table(summaries)
    return 0


def run_swarm(args: argparse.Namespace) -> int:
    # Imported here: loadtest.swarm.runner loads Locust, which patches this process with gevent.
    from loadtest.swarm.runner import run_swarm, run_workers

    config = target_config(args) if args.target else config_from(args)
    if args.join:
        return run_workers(config, args.join, args.workers)
    if not args.headless and (args.fault or args.json or args.fail_if or args.html or args.compare):
        flags = ("--fault", "--json", "--fail-if", "--html", "--compare")
        given = [flag for flag in flags if getattr(args, flag[2:].replace("-", "_"))]
        raise LoadTestError(
            f"{' and '.join(given)} {'needs' if len(given) == 1 else 'need'} --headless: "
            "with its web UI a swarm runs until stopped, its faults "
            "come from the Lab tab's buttons, and it writes no summary"
        )
    plan = SwarmPlan(
        **values_from_flags(SwarmPlan, args),
        start_users=args.users is not None,
        html_path=Path(args.html) if args.html else html_beside(args.json),
    )
    gate = ci_gate(args, config, plan)
    summary = run_swarm(config, plan)
    if summary is None:
        return 0
    return gate.judge(summary)

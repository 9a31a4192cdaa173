"""The commands that measure one server rather than run a cluster: bench and soak.

bench      the lab's server side by side with its peers under wrk, every round kind;
           or only requestState (--state), a held call's memory (--held), or
           instructions per request (--instructions)
soak       idle sockets beside a swarm of real calls: is every call served?
           (--attack NAME: a cluster's legitimate users, quiet and then beside each
           attack on its availability, side by side)
"""

from __future__ import annotations

import argparse
from typing import Any

from loadtest.cli.options import add_json_option, command_options, write_json
from loadtest.soak.attacks import ATTACKER_NICE, ATTACKS


def add_commands(commands: Any) -> None:
    """bench and soak."""
    _add_bench(commands)
    _add_soak(commands)


def _add_bench(commands: Any) -> None:
    bench = commands.add_parser("bench", help="the lab's server side by side with its peers")
    options = command_options(bench)
    options.add_argument(
        "--duration",
        dest="duration_s",
        type=float,
        default=3.0,
        help="seconds wrk times each server on each round kind in a pass (default: %(default)s)",
    )
    options.add_argument(
        "--passes", type=int, default=3, help="interleaved passes (median) (default: %(default)s)"
    )
    options.add_argument(
        "--connections",
        type=int,
        default=10,
        help="wrk's open connections to the server (default: %(default)s)",
    )
    options.add_argument(
        "--servers",
        default=None,
        help="a comma-separated subset of bare,lab,sdk,ts,ts-hmac; lab-mypyc adds the lab "
        "compiled by mypyc, floor a server that does only the state's work (default: "
        "bare,lab,sdk,ts,ts-hmac; with --instructions, bare,lab)",
    )
    options.add_argument(
        "--rounds",
        default=None,
        help="a comma-separated subset of the round kinds round1,retry,seal,open,shed "
        "(default: all)",
    )
    options.add_argument(
        "--compare-commit",
        action="append",
        default=[],
        metavar="REV",
        help="also run the lab's server of commit REV (its server package, extracted apart) "
        "in the same passes as today's, named lab@REV; repeatable (default: none)",
    )
    options.add_argument(
        "--held",
        type=int,
        default=0,
        metavar="CALLS",
        help="only memory per waiting 2025-11-25 call, lab vs the Python SDK's server, with "
        "this many calls held (default: 0, not measured)",
    )
    options.add_argument(
        "--state",
        action="store_true",
        help="only requestState vs raw AES-GCM, in process",
    )
    options.add_argument(
        "--instructions",
        type=int,
        default=0,
        metavar="N",
        help="only instructions per request, counted over N requests of each round kind "
        "(default: 0, not counted)",
    )
    add_json_option(options, "write the report here")
    bench.set_defaults(run=run_bench)


def _add_soak(commands: Any) -> None:
    soak = commands.add_parser("soak", help="idle sockets beside a swarm: is every call served?")
    options = command_options(soak)
    options.add_argument(
        "--idle", type=int, default=1100, help="sockets that never send (default: %(default)s)"
    )
    options.add_argument(
        "--clients",
        type=int,
        default=8,
        help="threads running whole MRTR calls back to back (default: %(default)s)",
    )
    options.add_argument(
        "--duration",
        dest="duration_s",
        type=float,
        default=10.0,
        help="seconds the clients call (default: %(default)s)",
    )
    options.add_argument(
        "--held",
        type=int,
        default=200,
        help="legacy calls one principal then tries to hold (default: %(default)s)",
    )
    options.add_argument(
        "--held-limit",
        type=int,
        default=20,
        help="the replica's held calls per principal (default: %(default)s)",
    )
    options.add_argument(
        "--attack",
        action="append",
        choices=(*ATTACKS, "all"),
        default=None,
        help="instead: run a cluster's legitimate users (--clients, each a principal of its "
        "own) for --duration quiet, then as long beside this attack, phase by phase; "
        "repeatable, or all, the control busy-core included (default: none)",
    )
    options.add_argument(
        "--attack-sockets",
        type=int,
        default=None,
        metavar="N",
        help="the size of each attack: sockets held, sockets per wave, calls, threads or "
        "principals (default: the sizes that took a replica down before the fixes: 1100 "
        "slow bodies, 2100 abandoned waits, 4 CPU-heavy calls, 2 threads of oversized "
        "requests, 1024 sockets of burst-stall and of drip, 1 small-CPU caller, 4 "
        "subscribing sessions, 520 principals' waits, 2 threads of Lab forgeries, and for "
        "the control busy-core, 1 spinning process)",
    )
    options.add_argument(
        "--attacker-nice",
        type=int,
        choices=range(0, 20),
        default=ATTACKER_NICE,
        metavar="N",
        help="the attack's CPU priority, 0 (the users' own) to 19 (the lowest, as if it ran "
        "on a machine of its own; on this one it shares the users' cores) (default: "
        "%(default)s)",
    )
    add_json_option(options, "write the report here")
    soak.set_defaults(run=run_soak)


def run_bench(args: argparse.Namespace) -> int:
    from loadtest.bench.report import print_report
    from loadtest.bench.rounds import KINDS
    from loadtest.bench.run import run_bench
    from loadtest.bench.targets import SERVERS

    chosen = tuple(args.servers.split(",")) if args.servers else None
    if args.held:
        from loadtest.bench.held_compare import compare_held, print_held

        report = compare_held(args.held)
        write_json(report, args.json)
        print_held(report)
        return 0
    if args.instructions:
        from loadtest.bench.instructions import count_instructions, print_instructions

        counts = count_instructions(
            servers=chosen or ("bare", "lab"),
            kinds=tuple(args.rounds.split(",")) if args.rounds else KINDS,
            requests=args.instructions,
            compare_commits=tuple(args.compare_commit),
        )
        write_json(counts, args.json)
        print_instructions(counts, args.instructions)
        return 0
    if args.state:
        from loadtest.bench.microbench import print_state_report, seal_open_microbench

        report = seal_open_microbench()
        write_json(report, args.json)
        print_state_report(report)
        return 0
    report = run_bench(
        duration_s=args.duration_s,
        connections=args.connections,
        passes=args.passes,
        servers=chosen or SERVERS,
        kinds=tuple(args.rounds.split(",")) if args.rounds else KINDS,
        compare_commits=tuple(args.compare_commit),
    )
    write_json(report, args.json)
    print_report(report)
    return 0


def run_soak(args: argparse.Namespace) -> int:
    if args.attack:
        return _run_attack_soak(args)
    from loadtest.soak.run import print_soak, run_soak

    report = run_soak(
        idle=args.idle,
        clients=args.clients,
        duration_s=args.duration_s,
        held_attempts=args.held,
        held_limit=args.held_limit,
    )
    write_json(report.as_dict(), args.json)
    print_soak(report)
    return 0 if report.failed == 0 else 1


def _run_attack_soak(args: argparse.Namespace) -> int:
    from loadtest.soak.run import print_attack_soak, run_attack_soak

    attacks = list(ATTACKS) if "all" in args.attack else list(dict.fromkeys(args.attack))
    sizes = {name: args.attack_sockets for name in attacks} if args.attack_sockets else None
    report = run_attack_soak(
        attacks,
        users=args.clients,
        duration_s=args.duration_s,
        sockets=sizes,
        attacker_nice=args.attacker_nice,
    )
    write_json(report.as_dict(), args.json)
    print_attack_soak(report)
    return 0 if report.failed == 0 else 1

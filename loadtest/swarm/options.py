"""The options of `python -m loadtest swarm`, apart from the swarm itself.

Kept out of `loadtest.swarm.runner`, which loads Locust (and with it gevent's patching of the
standard library) and so is imported only when a swarm really runs.
"""

from __future__ import annotations

import argparse

from loadtest.config import ARCHITECTURES, FAULTS


def add_swarm_options(p: argparse.ArgumentParser) -> None:
    """Every option of `python -m loadtest swarm`, each with its help."""
    p.add_argument(
        "--arch",
        choices=ARCHITECTURES,
        default="mrtr",
        help="the cluster's architecture and the users' client (default mrtr)",
    )
    p.add_argument(
        "--tools",
        default=None,
        help="tool mix as name=weight,..., e.g. get_weather=3,link_accounts=2",
    )
    p.add_argument(
        "--replicas",
        type=int,
        default=3,
        help="replicas of the lab's cluster behind HAProxy (default 3)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="local Locust worker processes running the users; 0 runs them in "
        "this process (default 1)",
    )
    p.add_argument(
        "--expect-workers",
        type=int,
        default=0,
        help="workers from other machines (--join) to wait for before starting",
    )
    p.add_argument(
        "--master-bind",
        default="127.0.0.1",
        help="interface the master listens on for workers (0.0.0.0 for other "
        "machines; default 127.0.0.1)",
    )
    p.add_argument(
        "--master-port",
        type=int,
        default=5557,
        help="port the master listens on for workers (default 5557)",
    )
    p.add_argument(
        "--join",
        default=None,
        metavar="HOST[:PORT]",
        help="run only --workers workers, for the master at HOST:PORT",
    )
    p.add_argument(
        "--target",
        default=None,
        metavar="URL",
        help="drive this MCP endpoint (e.g. http://host:8000/mcp) instead of a "
        "cluster of the lab's own; faults then come from its operator",
    )
    p.add_argument(
        "--headless",
        action="store_true",
        help="no web UI: run --users for --duration seconds, then summarise",
    )
    p.add_argument(
        "--users",
        type=int,
        default=None,
        help="concurrent users (default 20); with the web UI, start them at once",
    )
    p.add_argument(
        "--spawn-rate", type=float, default=None, help="users started per second (default 20)"
    )
    p.add_argument(
        "--duration",
        dest="duration_s",
        type=float,
        default=None,
        help="seconds of a headless run (default 20)",
    )
    p.add_argument(
        "--think-time",
        dest="think_time_median_s",
        type=float,
        default=None,
        help="median seconds a user thinks before answering (default 0.5)",
    )
    p.add_argument(
        "--drain-timeout",
        dest="drain_timeout_s",
        type=float,
        default=None,
        help="seconds a rolling upgrade waits for each replica to drain (default 2)",
    )
    p.add_argument(
        "--web-port",
        type=int,
        default=8089,
        help="port of Locust's web UI on 127.0.0.1 (default 8089)",
    )
    p.add_argument(
        "--json", default=None, help="write a headless run's summary here, Locust's HTML beside it"
    )
    p.add_argument(
        "--fault",
        choices=FAULTS,
        default=None,
        help="a headless run injects this fault into the lab's cluster at --fault-at",
    )
    p.add_argument(
        "--fault-at",
        dest="fault_at_s",
        type=float,
        default=None,
        help="seconds after the users start (default 5)",
    )

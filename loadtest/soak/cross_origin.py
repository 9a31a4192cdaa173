"""Forged requests to the Lab tab: what another web page, or a name rebound to
127.0.0.1, could make the operator's browser send to the swarm's web UI (run beside the
soak's legitimate users by `loadtest.soak.attacks`):

    cross-origin-lab  every Lab route, and the faults above all (`crash`, `restart`,
                      `rolling-upgrade`, `redis-outage` of replica r1), sent with another
                      site's `Origin` and `Sec-Fetch-Site`, with the tab's own header
                      added, and with a rebound `Host`; from `sockets` threads, paced

The answers are counted by route kind and status: a fault that got through would show as
202, and as a replica of the cluster gone.
"""

from __future__ import annotations

import itertools
import threading
import time

import httpx

from loadtest.soak.attacker import transport
from loadtest.soak.held_sockets import Report

#: Forged requests a second, all threads together: what the pages a browser shows might
#: send (the Lab's door is served from the legitimate users' process, so a flood of them
#: would be measured as the users' own slowness).
FORGED_PER_S = 10.0
#: The Lab's routes, as the tab's script calls them.
ROUTES = (
    *(
        ("POST", f"/lab/faults/{fault}")
        for fault in ("crash", "restart", "rolling-upgrade", "redis-outage")
    ),
    ("GET", "/lab/replicas"),
    ("GET", "/lab/events"),
    ("GET", "/lab/chart"),
    ("GET", "/stats/requests"),
)


def forgeries(port: int) -> list[dict[str, str]]:
    """The headers a forged request comes with: another site's form, that form with the
    tab's header (a script would need a preflight the UI never grants), a rebound name."""
    own = f"127.0.0.1:{port}"
    cross_site = {"Host": own, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
    return [
        cross_site,
        {**cross_site, "X-Lab-Tab": "1"},
        {
            "Host": f"attacker.example:{port}",
            "Origin": f"http://attacker.example:{port}",
            "X-Lab-Tab": "1",
        },
    ]


def cross_origin_lab(host: str, port: int, seconds: float, sockets: int, report: Report) -> None:
    """`sockets` threads sending forged requests to every Lab route at `host:port`, in
    turn, `FORGED_PER_S` a second in all, for `seconds`."""
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    gap_s = sockets / FORGED_PER_S
    # Every forgery of a fault first, then of the reads; each thread from its own place.
    kinds = [(route, headers) for route in ROUTES for headers in forgeries(port)]
    form = {"replica": "r1"}

    def sender(index: int) -> None:
        with httpx.Client(
            base_url=f"http://{host}:{port}", timeout=10, transport=transport()
        ) as http:
            for turn in itertools.count(index):
                if time.monotonic() >= deadline:
                    break
                (method, path), headers = kinds[turn % len(kinds)]
                try:
                    answer = str(
                        http.request(
                            method, path, headers=headers, data=form if method == "POST" else None
                        ).status_code
                    )
                except httpx.HTTPError:
                    answer = "closed"
                kind = "fault" if method == "POST" else "read"
                with lock:
                    report.sent += 1
                    report.answers[f"{kind} {answer}"] += 1
                time.sleep(gap_s)

    threads = [threading.Thread(target=sender, args=(i,)) for i in range(sockets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
